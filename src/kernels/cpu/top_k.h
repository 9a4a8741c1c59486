// The beam search's candidates: the k best entries of a row of log-probabilities. This is the spec
// of cuda::top_k_rows (kernels/cuda/top_k.h): best first, equal values in ascending id order, two
// ids left out (<pad> and <s>). A row with fewer than k other entries gives them all.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace dragoman::cpu {

// best = the k best (value, id) of row[0 .. v), leaving out ids skip_a and skip_b. T: float or double.
template <typename T>
void top_k_row(const T* row, std::int64_t v, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
               std::vector<std::pair<double, std::int32_t>>& best);

}  // namespace dragoman::cpu
