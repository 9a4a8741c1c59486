// Flash attention on tensor cores for any number of queries and keys (attention_flash.cu), called by
// cuda::attention_forward/backward (attention.cu) when attention_kernels() is `flash` and
// flash_attention_takes() the shape. Private to kernels/cuda/.
//
// The tiling of the tiled kernels (attention_tiled.h: a block owns a tile of rows and walks the other
// side tile by tile, the softmax online, no [B, H, T, S] tensor, no atomics) with the products of the
// tensor-core kernels (attention_mma.h: WMMA's 16 x 16 x 16 bf16/f16 tiles, float accumulators):
//   forward  a block per (b, h, 64 queries): Q K^T of each tile of 64 keys, the softmax online in
//            float (the running maximum and sum per query; the output's float accumulator rescaled
//            when the maximum grows), then O += P V.
//   dq       a block per (b, h, 64 queries): delta = sum_s p * dprob over every key tile first (into
//            the workspace, for dk/dv), then dq += dS K tile by tile (Q K^T and dout V^T computed a
//            second time, except when the keys fit one tile).
//   dk, dv   a block per (b, h, 64 keys): for each tile of 32 queries that see them, Q K^T and
//            dout V^T, then dv += P^T dout and dk += dS^T Q.
// The contract is the other families' (masks, scale, the dropout mask's Philox index over
// [B, H, T, S], lse; float compute, each stored element rounded once), and the precision that of
// the tensor-core kernels: the probabilities and dscore are rounded to T before their products, so
// each output is within one rounding of T of the magnitudes of its terms. Every sum runs in a fixed
// order (each accumulator tile belongs to one warp, the tiles are walked in order): a rerun gives the
// same bits.
// Shapes taken: bf16 and f16 on sm_80 and later, K and Kv multiples of 16 up to 128, when the
// kernels' shared memory fits the device (forward, dq and dk/dv blocks: 70.5, 96.5 and 78.5 KiB for
// K = Kv = 64, within every sm_80+ device's 99 KiB or more; 110.5, 144.5 and 134.5 KiB for 128).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/numeric.h"
#include "device/cuda/stream.h"
#include "kernels/attention.h"

namespace dragoman::cuda::attention_detail {

using cpu::AttentionShape;

// Whether the flash kernels take this shape for T on the current device.
template <typename T>
bool flash_attention_takes(const AttentionShape& shape);

// The dynamic shared memory of the largest of the three kernels' blocks for these head sizes (the
// most a block of the device must allow for flash_attention_takes).
std::size_t flash_attention_shared_bytes(std::int64_t key_size, std::int64_t value_size);

// As cuda::attention_forward/backward (attention.h); only for shapes flash_attention_takes().
// workspace: delta, [B, H, T] floats (attention_backward_workspace).
template <typename T>
void flash_attention_forward(const AttentionShape& shape, const T* q, const T* k, const T* v,
                             const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                             std::uint64_t rng_stream, float* lse, T* out, Stream stream);
template <typename T>
void flash_attention_backward(const AttentionShape& shape, const T* q, const T* k, const T* v,
                              const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                              std::uint64_t rng_stream, const float* lse, const T* dout, T* dq, T* dk, T* dv,
                              float* workspace, Stream stream);

}  // namespace dragoman::cuda::attention_detail
