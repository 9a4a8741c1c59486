// Attention on tensor cores for short sequences (attention_mma.cu), called by
// cuda::attention_forward/backward (attention.cu) when attention_kernels() is `mma` and
// mma_attention_takes() the shape. Private to kernels/cuda/.
//
// One block per (batch, head) holds all its queries and keys in shared memory (at most 64 of each:
// the sentences of most training batches), in T (bf16 or f16). The products (Q K^T, P V; in the
// backward pass also dout V^T, P^T dout, dS^T Q and dS K) are WMMA's 16 x 16 x 16 tiles with float
// accumulators; the softmax, masks, dropout (the same Philox index, [B, H, T, S]) and dscore are
// float on CUDA cores, as in the tiled kernels. The difference in precision: the probabilities (and
// in the backward pass dscore) are rounded to T before they enter a product, as flash attention does,
// so each output is within one rounding of T of the magnitudes of its terms (not only of itself)
// from the CPU spec. The backward pass is one kernel (no delta workspace, no atomics): every sum runs
// in a fixed order, so a rerun gives the same bits.
// Shapes taken: bf16 and f16 on sm_80 and later, queries and keys at most 64, K and Kv multiples of 16
// up to 128.
#pragma once

#include <cstdint>

#include "base/numeric.h"
#include "device/cuda/stream.h"
#include "kernels/attention.h"

namespace dragoman::cuda::attention_detail {

using cpu::AttentionShape;

// Whether the tensor-core kernels take this shape for T on the current device.
template <typename T>
bool mma_attention_takes(const AttentionShape& shape);

// As cuda::attention_forward/backward (attention.h); only for shapes mma_attention_takes(). The
// backward pass needs no workspace.
template <typename T>
void mma_attention_forward(const AttentionShape& shape, const T* q, const T* k, const T* v,
                           const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                           std::uint64_t rng_stream, float* lse, T* out, Stream stream);
template <typename T>
void mma_attention_backward(const AttentionShape& shape, const T* q, const T* k, const T* v,
                            const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                            std::uint64_t rng_stream, const float* lse, const T* dout, T* dq, T* dk, T* dv,
                            Stream stream);

}  // namespace dragoman::cuda::attention_detail
