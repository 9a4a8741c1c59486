// Row gathers of the decoder state shared by decode_step (transformer_decode.cpp) and the state's
// reorders and joins (decoder_state.cpp). Internal to src/model.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace dragoman::model {

// The rows of one gather as the gathers take them: as 32-bit indices, and on a GPU
// uploaded once for all the tensors that are gathered with them (not once per cache tensor).
struct RowIndex {
  explicit RowIndex(const std::vector<std::int64_t>& r) : rows(r), index(r.begin(), r.end()) {}
  const Tensor& on(Device device) {
    if (!uploaded.defined() || uploaded.device() != device) {
      uploaded = Tensor::from_vector(index, {static_cast<std::int64_t>(index.size())}).to(device);
    }
    return uploaded;
  }
  const std::vector<std::int64_t>& rows;
  std::vector<std::int32_t> index;
  Tensor uploaded;
};

// Rows `selection.rows` of x along dimension 0, in order, keeping only the first `length` entries of
// dimension 1 (the rest is left unset: unused cache positions). The result is a view of the first
// rows of a tensor of `allocated_rows` rows, so that the decoder state's tensors keep one size
// while beam search drops finished sentences: the caching allocator then reuses the same blocks
// step after step instead of asking the system for fresh (page-faulting) memory.
//   x: [B, L, ...] -> [rows.size(), L, ...]
Tensor select_batch_rows(const Tensor& x, RowIndex& selection, std::int64_t length, std::int64_t allocated_rows);

}  // namespace dragoman::model
