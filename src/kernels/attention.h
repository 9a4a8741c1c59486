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
// with store<T>(), when written. lse is a statistic, stored in acc_t<T> (accumulator_dtype). (Float
// compute, rather than double, keeps the float model's numpy fixtures within their tolerances and
// is what a CUDA kernel does.) The exps, the dot products over K and
// Kv and the sums over values use kernels/cpu/vector_math.h (exp within 1 ulp of std::exp; vector
// reductions) for every T but double.
// q/k/v/out are row-major [B, rows, H * size] blocks addressed by (batch stride, row stride), so a
// key/value cache of capacity P can be read as its first S rows without a copy.
// query_offset is the position of query 0 (incremental decoding: S - 1 for one query).
// (b, h) pairs run in parallel; every output element is computed by one thread in a fixed order.
//
// CUDA (namespace cuda):
// Scaled dot-product attention on CUDA, the twin of the CPU spec above: the same shape
// description, masks, scale, dropout (p, seed, rng_stream; element index = flat index in
// [B, H, T, S], keep test common::dropout_keeps) and precision (acc_t<T> compute, each stored
// element rounded once), plus a stream and the backward's workspace. T = double, float, bf16 or f16.
//
// Kernels (attention.cu), one block of kThreads threads per row, no atomics, every sum in a fixed
// order, so a rerun gives the same bits:
//   forward         one block per query (b, h, t): the scores (thread j takes keys j, j + 128, ...;
//                   each dot product over K in index order, as on the CPU) and the probabilities in
//                   shared memory; max and sum over the keys by a fixed tree (a per-thread strided
//                   sum, a warp butterfly, then the warps in order); out[i] by thread i summing the
//                   keys in order.
//   backward dq     one block per query (b, h, t): probabilities again from lse, dprob = dout . v_s
//                   (dropout applied), delta = sum_s p * dprob by the same tree (saved in the
//                   workspace), dscore in shared memory, dq[i] summed over the keys in order.
//   backward dk/dv  one block per key (b, h, s): for every query t that sees s, p, dprob and dscore
//                   again (delta from the workspace) in shared memory, then dk[i] and dv[i] summed
//                   over the queries in order (the CPU's order).
// Against the CPU spec: the dot products and the per-key and per-query sums are the CPU's, in its
// order; exp/log are CUDA's (within 2 ulp of float, not glibc's bits) and the softmax sum and delta
// are summed in another order, so results are within a few float ulps of the CPU's before the
// rounding to T.
// These naive kernels are simple, not fast: each thread of the score phase reads a whole key row
// (uncoalesced), k and v are read once per query and q and dout once per key. Shared memory holds
// two acc_t<T> arrays of S (forward, dq) or T (dk/dv) elements plus a row of q and dout: the
// launchers throw when that exceeds 48 KiB (S or T above about 6,000 in float, 3,000 in double).
//
// The tiled kernels (attention_tiled.h: 32 rows a block, tiles of 64 through shared memory, the
// softmax online, as flash attention) compute the same contract for float, bf16 and f16 with K and
// Kv up to 128, any S and T; the tensor-core kernels (attention_mma.h) short sequences in bf16 and
// f16, the flash ones (attention_flash.h: the tiled kernels' walk with tensor-core products) any
// length in bf16 and f16. Which kernels run is attention_kernels() below.
// All pointers are device memory of the stream's device (the caller holds its DeviceGuard),
// key_lengths included.
#pragma once

#include <cstdint>

#include "base/numeric.h"
#include "device/cuda/stream.h"

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

namespace dragoman::cuda {

using cpu::AttentionShape;

// Which kernels attention_forward/backward run:
//   automatic (the default), with at least kTiledMinQueries queries (training, scoring, the encoder
//     of a sentence that long): the tensor-core kernels where they take the shape (attention_mma.h:
//     bf16/f16, at most 64 queries and 64 keys, head sizes multiples of 16, sm_80 or later), else
//     the tiled ones where they take it; with fewer queries (a decoding step: one query of
//     self-attention, a beam's few queries of cross-attention, where a tile would be mostly idle)
//     and for double, the naive ones. (On the H100, 2026-11-27: a base bf16 training step of 32
//     tokens a sentence 28 ms with the tensor-core kernels, 32 with the tiled ones, 82 naive.)
//   naive: always the naive kernels;
//   tiled: the tiled kernels wherever they take the shape, one query too (the tests run every case
//     both ways);
//   mma: the tensor-core kernels wherever they take the shape, one query too; elsewhere the
//     automatic choice.
//   flash: the flash tensor-core kernels (attention_flash.h: bf16/f16, any number of queries and
//     keys, head sizes multiples of 16, sm_80 or later) wherever they take the shape, one query too;
//     elsewhere the automatic choice. Written without a GPU (2026-12-06) and not yet run on one, so
//     not part of the automatic choice: once their parity tests pass on a GPU and model_bench
//     measures them against the tiled kernels on sentences over 64 tokens (docs/GPU.md), automatic
//     takes them where they are faster.
// The first call reads DRAGOMAN_CUDA_ATTENTION (auto, naive, tiled, mma or flash; anything else is
// an error); set_attention_kernels overrides it for the process (tests, benchmarks).
enum class AttentionKernels { automatic, naive, tiled, mma, flash };
inline constexpr std::int64_t kTiledMinQueries = 16;  // half a tile of queries
void set_attention_kernels(AttentionKernels kernels);
AttentionKernels attention_kernels();
// The family that attention_forward/backward run for this shape under attention_kernels(): naive,
// tiled, mma or flash (never automatic).
template <typename T>
AttentionKernels attention_kernels_for(const AttentionShape& shape);

// lse: [B, H, T] of acc_t<T>, written when not null; key_lengths: i32 [B].
template <typename T>
void attention_forward(const AttentionShape& shape, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                       double scale, double dropout_p, std::uint64_t seed, std::uint64_t rng_stream, acc_t<T>* lse,
                       T* out, Stream stream);

// The acc_t<T> elements of attention_backward's workspace: delta [B, H, T].
inline std::int64_t attention_backward_workspace(const AttentionShape& shape) {
  return shape.batch * shape.heads * shape.queries;
}

// dq, dk, dv (assigned; dq with q's strides, dk k's, dv v's) from the forward's lse and the same
// dropout; workspace: [attention_backward_workspace(shape)] of acc_t<T>.
template <typename T>
void attention_backward(const AttentionShape& shape, const T* q, const T* k, const T* v,
                        const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                        std::uint64_t rng_stream, const acc_t<T>* lse, const T* dout, T* dq, T* dk, T* dv,
                        acc_t<T>* workspace, Stream stream);

}  // namespace dragoman::cuda
