// Token embeddings with positions (kernels/cpu/embedding.h).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace dragoman::ops {

// out[b, t] = scale * table[ids[b, t]] + positions[position_offset + t] (positions may be
// undefined).   ids: i32 [B, L] (CPU); table: [V, D]; positions: [P, D] -> [B, L, D].
// An id outside [0, V) or a position beyond P is an error naming it.
Tensor embedding(const Tensor& ids, const Tensor& table, const Tensor& positions, std::int64_t position_offset,
                 double scale);

// dtable += ..., dpositions += ... (when defined).
void embedding_backward(const Tensor& ids, const Tensor& dout, const Tensor& dtable, const Tensor& dpositions,
                        std::int64_t position_offset, double scale);

// The paper's sinusoidal position table.   -> [P, D] (D even)
Tensor sinusoidal_positions(std::int64_t positions, std::int64_t d, DType dtype);

}  // namespace dragoman::ops
