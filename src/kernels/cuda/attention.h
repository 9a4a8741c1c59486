// Scaled dot-product attention on CUDA, the twin of kernels/cpu/attention.h: the same shape
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
#include "kernels/cpu/attention.h"
#include "device/cuda/stream.h"

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
