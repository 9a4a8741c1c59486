// Scaled dot-product attention with key-padding and causal masks, the CPU spec.
//
// Per batch row b and head h, for queries t < T and keys s < S:
//   score[t, s] = scale * (q[b, t, h*K : h*K+K] . k[b, s, h*K : h*K+K])
//   masked when s >= key_lengths[b], or (causal) s > query_offset + t: probability exactly 0
//   lse[b, h, t] = log(sum over the unmasked s of exp(score[t, s]))   (0 if every key is masked)
//   probs[b, h, t, s] = exp(score[t, s] - lse[b, h, t]) (the softmax; 0 where masked)
//   dropped = dropout(probs) (attention dropout; element index = flat index in [B, H, T, S])
//   out[b, t, h*Kv : h*Kv+Kv] = sum_s dropped[b, h, t, s] * v[b, s, h*Kv : h*Kv+Kv]
// The forward pass saves only lse [B, H, T] for the backward pass, which recomputes the
// probabilities from q, k and lse, and the dropout mask from Philox (as flash attention does): no
// [B, H, T, S] tensor is ever stored.
// Precision (base/numeric.h): T is double, float, bf16 or f16. Scores, the softmax, its gradient
// and every sum over keys or queries are computed in acc_t<T> (float for float, bf16 and f16; double
// for double); out, dq, dk and dv are summed in acc_t<T> buffers and each element is rounded once,
// with store<T>(), when written. lse is a statistic, stored in acc_t<T> (accumulator_dtype). (Until
// #12, float attention computed in double; float compute keeps the float model's numpy fixtures
// within their tolerances and is what a CUDA kernel does.) The exps, the dot products over K and
// Kv and the sums over values use kernels/cpu/vector_math.h (exp within 1 ulp of std::exp; vector
// reductions) for every T but double.
// q/k/v/out are row-major [B, rows, H * size] blocks addressed by (batch stride, row stride), so a
// key/value cache of capacity P can be read as its first S rows without a copy.
// query_offset is the position of query 0 (incremental decoding: S - 1 for one query).
// (b, h) pairs run in parallel; every output element is computed by one thread in a fixed order.
#pragma once

#include <cstdint>

#include "base/numeric.h"

namespace dragoman::cpu {

struct AttentionShape {
  std::int64_t batch = 0, heads = 0, queries = 0, keys = 0, key_size = 0, value_size = 0;  // B H T S K Kv
  std::int64_t q_batch_stride = 0, q_row_stride = 0;
  std::int64_t k_batch_stride = 0, k_row_stride = 0;
  std::int64_t v_batch_stride = 0, v_row_stride = 0;
  std::int64_t out_batch_stride = 0, out_row_stride = 0;
  bool causal = false;
  std::int64_t query_offset = 0;
};

// lse: [B, H, T] of acc_t<T>, written when not null (a training step's forward; decoding passes null). `rng_stream`
// is the Philox stream of the dropout mask.
template <typename T>
void attention_forward(const AttentionShape& shape, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                       double scale, double dropout_p, std::uint64_t seed, std::uint64_t rng_stream, acc_t<T>* lse,
                       T* out);

// Gradients of out with respect to q, k and v (assigned), from the forward's lse and the same
// dropout (p, seed, rng_stream). dq has q's strides, dk k's, dv v's.
template <typename T>
void attention_backward(const AttentionShape& shape, const T* q, const T* k, const T* v,
                        const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                        std::uint64_t rng_stream, const acc_t<T>* lse, const T* dout, T* dq, T* dk, T* dv);

// The attention probabilities themselves, probs[b, h, t, s] as above (without dropout; 0 where
// masked), in float whatever T is: what alignments and attention pictures read. Computed exactly as
// the forward computes them (the same scores, maximum and exps), rounded to float at the end.
template <typename T>
void attention_probabilities(const AttentionShape& shape, const T* q, const T* k, const std::int32_t* key_lengths,
                             double scale, float* probs);

}  // namespace dragoman::cpu
