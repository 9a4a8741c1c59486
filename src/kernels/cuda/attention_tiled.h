// The tiled attention kernels (attention_tiled.cu), called by cuda::attention_forward/backward
// (attention.cu) when attention_kernels() lets them take a shape. Private to kernels/cuda/.
//
// Each block owns 32 rows (queries for the forward pass and dq, keys for dk/dv) and walks the other
// side in tiles of 64 rows: both tiles in shared memory as float, each of the 128 threads computing
// a 4 x 4 block of scores (every dot product over K in index order, in float with FMA), the softmax
// online (flash attention's running maximum and sum per query, the output rescaled when the maximum
// grows), then the tile's products with V (or K, Q, dout) from shared memory. Masks, scale, the
// dropout mask (the same Philox index, [B, H, T, S]) and the precision contract (float compute,
// every stored element rounded once) are the naive kernels'. The sums run in a fixed order (keys,
// or queries for dk/dv, in index order), so a rerun gives the same bits; against the CPU spec they
// differ by the online softmax's rescaling and the order of the softmax sum and delta (a few float
// ulps of the terms' magnitudes, as the naive kernels).
// The backward pass recomputes the scores twice per query tile (delta = sum_s p * dprob first, then
// dq; once when the keys fit one tile of 64) and once per key tile (dk, dv): no [B, H, T, S] tensor
// and no atomics. Tiles are read from global memory 16 bytes at a time where rows allow (head sizes
// a multiple of 8 in bf16/f16, of 4 in float), several loads in flight per thread; a tile whose
// other side has at most 32 rows (sentences of up to 32 tokens) computes only the scores of those.
// Shapes taken: float, bf16 and f16 (double stays on the naive kernels) with K and Kv at most 128,
// when the tiles fit the device's shared memory per block (50-116 KiB: sm_80 and later).
#pragma once

#include <cstdint>

#include "base/numeric.h"
#include "device/cuda/stream.h"
#include "kernels/attention.h"

namespace dragoman::cuda::attention_detail {

using cpu::AttentionShape;

// Whether the tiled kernels take this shape for T (float, bf16, f16) on the current device.
template <typename T>
bool tiled_attention_takes(const AttentionShape& shape);

// As cuda::attention_forward/backward (attention.h); only for shapes tiled_attention_takes().
template <typename T>
void tiled_attention_forward(const AttentionShape& shape, const T* q, const T* k, const T* v,
                             const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                             std::uint64_t rng_stream, float* lse, T* out, Stream stream);
template <typename T>
void tiled_attention_backward(const AttentionShape& shape, const T* q, const T* k, const T* v,
                              const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                              std::uint64_t rng_stream, const float* lse, const T* dout, T* dq, T* dk, T* dv,
                              float* workspace, Stream stream);

}  // namespace dragoman::cuda::attention_detail
