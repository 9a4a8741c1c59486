// Device helpers shared by the two attention implementations (attention.cu: one block per row;
// attention_tiled.cu: tiles through shared memory): which keys a query sees, the dropout factor of
// one probability, and the accumulator type's exp and log. Private to kernels/cuda/attention*.cu.
#pragma once

#include <cstdint>

#include "core/philox.h"
#include "kernels/common/dropout.h"
#include "kernels/cpu/attention.h"

namespace dragoman::cuda::attention_detail {

using cpu::AttentionShape;

// The number of keys query t may see (kernels/cpu/attention.cpp): keys s < n are visible.
__device__ inline std::int64_t visible_keys(const AttentionShape& a, std::int32_t key_length, std::int64_t t) {
  std::int64_t n = key_length < a.keys ? key_length : a.keys;
  if (a.causal && a.query_offset + t + 1 < n) n = a.query_offset + t + 1;
  return n > 0 ? n : 0;
}

// Attention dropout: the factor of probability `index` of [B, H, T, S]: 1 without dropout, else
// keep_scale or 0 by the CPU's keep test.
template <typename A>
struct Dropout {
  bool on;
  float threshold;  // p as a float
  A keep_scale;     // 1 / (1 - p), computed in double and rounded to A, as on the CPU
  std::uint64_t seed, rng_stream;

  __device__ A mask(std::int64_t index) const {
    if (!on) return A(1);
    // philox::bits(seed, rng_stream, index), with the word picked by selects: indexing the block's
    // array with index % 4 would put it in local memory.
    const philox::Block r = philox::block_bits(seed, rng_stream, static_cast<std::uint64_t>(index) >> 2);
    const int w = static_cast<int>(index & 3);
    const std::uint32_t bits = w == 0 ? r.v[0] : w == 1 ? r.v[1] : w == 2 ? r.v[2] : r.v[3];
    return common::dropout_keeps(bits, threshold) ? keep_scale : A(0);
  }
};

template <typename A>
Dropout<A> dropout_of(double p, std::uint64_t seed, std::uint64_t rng_stream) {
  return {p > 0, static_cast<float>(p), static_cast<A>(1.0 / (1.0 - p)), seed, rng_stream};
}

// exp and log of the accumulator type: CUDA's expf/logf (within 2 ulps) for float, exp/log for double.
__device__ inline float exp_acc(float x) { return expf(x); }
__device__ inline double exp_acc(double x) { return ::exp(x); }
__device__ inline float log_acc(float x) { return logf(x); }
__device__ inline double log_acc(double x) { return ::log(x); }

}  // namespace dragoman::cuda::attention_detail
