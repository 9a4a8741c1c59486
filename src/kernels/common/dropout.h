// The per-element inverted dropout, shared by the CPU spec (kernels/cpu/elementwise.cpp) and its
// CUDA twin (kernels/cuda/elementwise.cu): element i is kept when philox::uniform(seed, rng_stream, i)
// >= p, and then multiplied by keep_scale = 1 / (1 - p) in acc_t<T> and rounded once; otherwise 0.
// The fused residual sum x + dropout(y) rounds the same two times as the two passes it replaces.
// The keep test is also attention dropout's (kernels/cpu/attention.cpp, kernels/cuda/attention.cu).
#pragma once

#include <cstdint>

#include "base/host_device.h"
#include "base/numeric.h"
#include "base/philox.h"

namespace dragoman::common {

// Whether dropout keeps the element of these 32 random bits; threshold = p as a float.
DRAGOMAN_HOST_DEVICE inline bool dropout_keeps(std::uint32_t bits, float threshold) {
  return philox::to_uniform(bits) >= threshold;
}

// The output element of input x given the element's 32 random bits.
template <typename T>
DRAGOMAN_HOST_DEVICE inline T dropout_element(T x, std::uint32_t bits, float threshold, acc_t<T> keep_scale) {
  return dropout_keeps(bits, threshold) ? store<T>(load(x) * keep_scale) : T();
}

// x + dropout(y) for one element (the residual connection's sum): the dropped element rounded to T,
// then the sum rounded once, which are the roundings of an add after a dropout.
template <typename T>
DRAGOMAN_HOST_DEVICE inline T dropout_add_element(T x, T y, std::uint32_t bits, float threshold, acc_t<T> keep_scale) {
  return store<T>(load(x) + load(dropout_element(y, bits, threshold, keep_scale)));
}

}  // namespace dragoman::common
