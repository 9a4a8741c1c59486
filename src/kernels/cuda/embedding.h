// Token embeddings and positions on CUDA, the twins of kernels/cpu/embedding.h: same arguments plus
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
                        double scale, std::int64_t vocab, void* workspace, Stream stream);

}  // namespace dragoman::cuda
