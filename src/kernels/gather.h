// Row copies of the decoder state, the specs of the CUDA twins below. Rows are `src_stride` /
// `dst_stride` bytes apart; a row's first row_bytes are contiguous.
//   gather_row_prefixes: beam search's reordering (Transformer::select_rows): row i of the output
//     is the first `row_bytes` bytes of row rows[i] of the input.
//   scatter_row_prefixes: the reverse, the keys and values of a decoding step written to each
//     row's own position of the caches (rows that joined the search at different steps): row
//     rows[i] of the output gets the first `row_bytes` bytes of row i of the input (rows distinct).
//   plan_row_moves / move_rows: the same reordering in place (the caches keep their memory, and
//     rows that stay where they are cost nothing).
//
// CUDA (namespace cuda):
// The twins of the CPU spec above on CUDA: every row in one launch (a beam search step
// reorders the keys and values of every layer with one kernel each, not one copy per row). rows
// is device memory; the bytes are copied in 4-byte words where every size and stride allows, else
// in 2-byte ones, else bytes. Asynchronous on `stream`.
#pragma once

#include <cstdint>
#include <vector>

#include "device/cuda/stream.h"

namespace dragoman::cpu {

void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes);
// The same with each output row's own prefix length: row_bytes[i] bytes for output row i (the
// decoder's caches when its sources have been fed different numbers of tokens). CPU only: on a GPU
// the caches are gathered with the longest prefix (the rest of each row's is never read).
void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, const std::int64_t* row_bytes);
// "Row i becomes old row rows[i], for i < count" (rows may repeat, drop or reorder old rows) done
// in place: copies ordered so that every row is read before it is overwritten, and one old row
// saved to scratch for each cycle of moves (two beams trading places). Rows with rows[i] == i are
// not copied. units[i]: the prefix length, in units (cache positions), that row i needs.
struct RowMoves {
  struct Copy {
    std::int32_t to = 0;    // a row, or for saves the scratch row
    std::int32_t from = 0;  // a row, or the scratch row when from_scratch
    bool from_scratch = false;
    std::int64_t units = 0;
  };
  std::vector<Copy> saves;   // rows copied to scratch first
  std::vector<Copy> copies;  // then these, in order
};
RowMoves plan_row_moves(const std::int32_t* rows, std::int64_t count, const std::int64_t* units);

// One tensor the moves apply to: rows `stride` bytes apart from `data`, `unit_bytes` a unit.
struct RowBlock {
  void* data = nullptr;
  std::int64_t stride = 0;
  std::int64_t unit_bytes = 0;
};
// Applies `moves` to every block (the same reordering of each: a decoder's caches of every layer),
// blocks shared by the OpenMP threads.
void move_rows(const RowMoves& moves, const std::vector<RowBlock>& blocks);

void scatter_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                          const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes);

}  // namespace dragoman::cpu

namespace dragoman::cuda {

void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes, Stream stream);
void scatter_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                          const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes, Stream stream);

}  // namespace dragoman::cuda
