// Token embeddings with positions (kernels/embedding.h). table, positions, the output and dout
// are of one dtype (f64, f32, bf16 or f16); dtable and dpositions, parameter gradients, are of its
// accumulator dtype (f64 for f64, f32 otherwise).
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "ops/sinusoid_layout.h"

namespace dragoman::ops {

// out[b, t] = scale * table[ids[b, t]] + positions[position_offset + t] (positions may be
// undefined).   ids: i32 [B, L] (CPU); table: [V, D]; positions: [P, D] -> [B, L, D].
// An id outside [0, V) or a position beyond P is an error naming it.
Tensor embedding(const Tensor& ids, const Tensor& table, const Tensor& positions, std::int64_t position_offset,
                 double scale);

// dtable += ..., dpositions += ... (when defined; undefined for positions that are not learned).
// Positions whose id is `padding_id` (-1: none) add nothing to dtable (nn.Embedding's padding_idx).
//   dout: [B, L, D]; dtable: [V, D]; dpositions: [P, D]
void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable, Tensor& dpositions,
                        std::int64_t position_offset, double scale, std::int32_t padding_id = -1);

// The sinusoidal position table in `layout` (kernels/embedding.h; the paper's by default),
// computed in double and rounded once to `dtype` (any float dtype).   -> [P, D] (D even)
Tensor sinusoidal_positions(std::int64_t positions, std::int64_t d, DType dtype,
                            SinusoidLayout layout = SinusoidLayout::kInterleaved);

}  // namespace dragoman::ops
