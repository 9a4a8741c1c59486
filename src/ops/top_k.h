// The beam search's candidates as an op: the k best entries of each row of f32 log-probabilities
// (kernels/top_k.h is the spec; kernels/top_k.h its twin), so that a GPU decoder sends
// only k candidates per row to the host instead of the whole vocabulary.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace dragoman::ops {

struct TopK {
  Tensor values;      // f32 [rows, k], best first (-inf where a row has fewer candidates)
  Tensor ids;         // i32 [rows, k] (-1 there)
  Tensor eos_values;  // f32 [rows]: each row's value at `eos`
};

// x: f32 [rows, V] on any device; the results are on x's device. Ids skip_a and skip_b are left out.
TopK top_k_rows(const Tensor& x, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b, std::int32_t eos);

// The same candidates on the host, for a decoder's step: from a GPU in one copy (the three results
// packed in one device buffer) and one wait, instead of three.
struct HostTopK {
  std::vector<float> values;      // [rows * k]
  std::vector<std::int32_t> ids;  // [rows * k]
  std::vector<float> eos_values;  // [rows]
};
// The CPU decoder's candidates from one host row of log-probabilities [V] (T: float or double):
// best = the k best (value, id), best first, equal values in ascending id order, ids skip_a and
// skip_b left out (kernels/top_k.h).
template <typename T>
void top_k_row(const T* row, std::int64_t v, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
               std::vector<std::pair<double, std::int32_t>>& best);

HostTopK top_k_rows_to_host(const Tensor& x, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
                            std::int32_t eos);

}  // namespace dragoman::ops
