// The beam search's candidates: the k best entries of a row of log-probabilities. This is the spec
// of cuda::top_k_rows (below): best first, equal values in ascending id order, two
// ids left out (<pad> and <s>). A row with fewer than k other entries gives them all.
//
// CUDA (namespace cuda):
// The beam search's candidates on CUDA, the twin of the CPU spec above for every row at once: the k
// best (value, id) of each row of f32 log-probabilities, best first, equal values in ascending id
// order, ids skip_a and skip_b left out; where a row has fewer than k other entries the rest are id
// -1, value -inf. Also each row's value at `eos` (the only candidate of a hypothesis at its length
// cap). NaN entries are never chosen (the CPU spec may keep a NaN in a row with fewer than k other
// entries; log-probabilities are not NaN).
//
// One block per row. Up to k = 32 (beam 16's 2K candidates: kernels/common/top_k.h) one pass over the row: each
// thread keeps its k best in registers, then k rounds merge the threads' lists (warp shuffles, then
// the warps' winners). Above that, k passes over the row, each a block-wide argmax (a fixed tree
// order) over the entries after the previous pick. Either way the order is (value descending, id
// ascending): the same picks as the CPU's, for any k. All pointers are device memory of the
// stream's device; asynchronous on `stream`.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "device/cuda/stream.h"

namespace dragoman::cpu {

// best = the k best (value, id) of row[0 .. v), leaving out ids skip_a and skip_b. T: float or double.
template <typename T>
void top_k_row(const T* row, std::int64_t v, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
               std::vector<std::pair<double, std::int32_t>>& best);

}  // namespace dragoman::cpu

namespace dragoman::cuda {

//   x: [rows, v]; values, ids: [rows, k]; eos_values: [rows]
void top_k_rows(const float* x, std::int64_t rows, std::int64_t v, std::int64_t k, std::int32_t skip_a,
                std::int32_t skip_b, std::int32_t eos, float* values, std::int32_t* ids, float* eos_values,
                Stream stream);

}  // namespace dragoman::cuda
