// The beam search's reordering of the decoder state (Transformer::select_rows): row i of the output
// is the first `row_bytes` bytes of row rows[i] of the input. Rows are `src_stride` / `dst_stride`
// bytes apart; a row's first row_bytes are contiguous. The spec of cuda::gather_row_prefixes.
#pragma once

#include <cstdint>

namespace dragoman::cpu {

void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes);

}  // namespace dragoman::cpu
