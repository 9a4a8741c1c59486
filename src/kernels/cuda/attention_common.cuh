// Device helpers shared by the attention implementations (attention.cu: one block per row;
// attention_tiled.cu: tiles through shared memory; attention_mma.cu: tensor cores, one block per
// head): which keys a query sees, the dropout factor of one probability, the accumulator type's exp
// and log, and 16-byte reads of rows. Private to kernels/cuda/attention*.cu.
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/numeric.h"
#include "base/philox.h"
#include "kernels/attention.h"
#include "kernels/common/dropout.h"

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

// Element j of a 16-byte vector of T (4 floats or 8 16-bit values), as float.
template <typename T>
__device__ inline float vector_element(const uint4& v, int j) {
  constexpr int kPerWord = 4 / static_cast<int>(sizeof(T));
  const int w = j / kPerWord;
  const unsigned word = w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
  if constexpr (std::is_same_v<T, float>) {
    return __uint_as_float(word);
  } else {
    return load(T::from_bits(static_cast<std::uint16_t>(word >> (16 * (j % kPerWord)))));
  }
}

// q_row . ks over K elements, in index order: the products and sums of the plain loop, bit for bit.
// A key row at a 16-byte address with K a multiple of 16 / sizeof(T) is read 16 bytes at a time
// (K / 8 loads for bf16 instead of K: each thread reads its own key row, so a warp's scalar loads
// touch 32 rows an instruction).
template <typename T, typename A>
__device__ inline A row_dot(const A* q_row, const T* ks, std::int64_t K) {
  A dot = 0;
  if constexpr (!std::is_same_v<T, double>) {
    constexpr int kVector = 16 / static_cast<int>(sizeof(T));
    if (K % kVector == 0 && reinterpret_cast<std::uintptr_t>(ks) % 16 == 0) {
      for (std::int64_t i0 = 0; i0 < K; i0 += kVector) {
        const uint4 raw = *reinterpret_cast<const uint4*>(ks + i0);
#pragma unroll
        for (int j = 0; j < kVector; ++j) dot += q_row[i0 + j] * vector_element<T>(raw, j);
      }
      return dot;
    }
  }
  for (std::int64_t i = 0; i < K; ++i) dot += q_row[i] * load(ks[i]);
  return dot;
}

// exp and log of the accumulator type: CUDA's expf/logf (within 2 ulps) for float, exp/log for double.
__device__ inline float exp_acc(float x) { return expf(x); }
__device__ inline double exp_acc(double x) { return ::exp(x); }
__device__ inline float log_acc(float x) { return logf(x); }
__device__ inline double log_acc(double x) { return ::log(x); }

}  // namespace dragoman::cuda::attention_detail
