// Row copies of the decoder state, the specs of kernels/cuda/gather.h. Rows are `src_stride` /
// `dst_stride` bytes apart; a row's first row_bytes are contiguous.
//   gather_row_prefixes: beam search's reordering (Transformer::select_rows): row i of the output
//     is the first `row_bytes` bytes of row rows[i] of the input.
//   scatter_row_prefixes: the reverse, the keys and values of a decoding step written to each
//     row's own position of the caches (rows that joined the search at different steps): row
//     rows[i] of the output gets the first `row_bytes` bytes of row i of the input (rows distinct).
#pragma once

#include <cstdint>

namespace dragoman::cpu {

void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes);
// The same with each output row's own prefix length: row_bytes[i] bytes for output row i (the
// decoder's caches when its sources have been fed different numbers of tokens). CPU only: on a GPU
// the caches are gathered with the longest prefix (the rest of each row's is never read).
void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, const std::int64_t* row_bytes);
void scatter_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                          const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes);

}  // namespace dragoman::cpu
