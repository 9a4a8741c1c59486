// Token embeddings and positions, the CPU spec.
//   out[r] = scale * table[ids[r]] + positions[position_offset + r % length]     (positions optional)
// for rows r of a [B, length] id matrix flattened to B * length rows. Ids must be in [0, V)
// (the op checks). T is the storage type of table, positions, out and dout: double, float, bf16 or
// f16 (base/numeric.h). Forward: each out element is computed in acc_t<T> (double for double, float
// otherwise) and rounded once. Backward accumulates into dtable (and dpositions), parameter
// gradients of type acc_t<T>, with no rounding to T: for each column, rows are added in order, so
// repeated ids give the same bits for any thread count. Rows whose id is `padding_id` (>= 0; -1:
// none) add nothing to dtable (PyTorch's nn.Embedding padding_idx: an imported Marian model's
// decoder starts from <pad>, a constant input), but still to dpositions.
//
// CUDA (namespace cuda):
// Token embeddings and positions on CUDA, the twins of the CPU spec above: same arguments plus
// a stream (and the backward's workspace). T = double, float, bf16 or f16; dtable and dpositions
// acc_t<T>.
// Ids are not checked here: they must be in [0, V) (a batch on a GPU was validated on the host by
// Batch::to, model/batch.h); an id outside it reads or writes outside the table.
// Both directions give the CPU spec's bits:
//   forward: one thread per output element, the spec's expression and rounding.
//   backward: every dtable element is owned by one thread, which adds the rows of its id in row
//     order, as the CPU does: the rows are grouped by id with a stable radix sort (CUB), so each
//     id's rows keep their order, and per id one block for each 128 columns walks them (one column
//     a thread, 8 rows' loads in flight). dpositions: one thread per (position, column) adds the
//     batch's rows in order. No atomics.
// All pointers are device memory of the stream's device (the caller holds its DeviceGuard).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/numeric.h"
#include "device/cuda/stream.h"

namespace dragoman::cpu {

// ids: [rows]; table: [V, D]; positions: [P, D] or nullptr; out: [rows, D].
template <typename T>
void embedding_forward(const std::int32_t* ids, const T* table, const T* positions, T* out, std::int64_t rows,
                       std::int64_t length, std::int64_t position_offset, std::int64_t d, double scale);

// dout: [rows, D]; dtable: [V, D] (+=); dpositions: [P, D] (+=) or nullptr.
template <typename T>
void embedding_backward(const std::int32_t* ids, const T* dout, acc_t<T>* dtable, acc_t<T>* dpositions,
                        std::int64_t rows, std::int64_t length, std::int64_t position_offset, std::int64_t d,
                        double scale, std::int32_t padding_id = -1);

// Sinusoids with frequencies w_i, i < D/2, in one of three layouts (model/config.h SinusoidLayout):
//   interleaved (the paper):   out[t, 2i] = sin(t w_i), out[t, 2i+1] = cos(t w_i), w_i = 10000^(-2i/D)
//   concatenated (MarianMT):   out[t, i] = sin(t w_i), out[t, D/2 + i] = cos(t w_i), the same w_i
//   tensor2tensor (Marian):    as concatenated with w_i = 10000^(-i/(D/2 - 1)) (D >= 4)
// Computed in double and rounded once to T (cpu::round_once).   out: [P, D], D even.
template <typename T>
void sinusoidal_positions(T* out, std::int64_t positions, std::int64_t d, int layout);

}  // namespace dragoman::cpu

namespace dragoman::cuda {

// ids: [rows]; table: [V, D]; positions: [P, D] or nullptr; out: [rows, D].
template <typename T>
void embedding_forward(const std::int32_t* ids, const T* table, const T* positions, T* out, std::int64_t rows,
                       std::int64_t length, std::int64_t position_offset, std::int64_t d, double scale, Stream stream);

// The bytes of embedding_backward's workspace for `rows` ids below `vocab` (the sorted ids and rows,
// and CUB's temporary storage). Calls CUB's size query (no device work).
std::size_t embedding_backward_workspace(std::int64_t rows, std::int64_t vocab);

// dout: [rows, D]; dtable: [V, D] (+=); dpositions: [P, D] (+=) or nullptr;
// workspace: embedding_backward_workspace(rows, V) bytes (any alignment).
template <typename T>
void embedding_backward(const std::int32_t* ids, const T* dout, acc_t<T>* dtable, acc_t<T>* dpositions,
                        std::int64_t rows, std::int64_t length, std::int64_t position_offset, std::int64_t d,
                        double scale, std::int64_t vocab, void* workspace, Stream stream, std::int32_t padding_id = -1);

}  // namespace dragoman::cuda
