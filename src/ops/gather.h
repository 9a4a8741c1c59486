// Row copies of a decoder's state (kernels/gather.h: the CPU spec and its CUDA twin):
// beam search's reorderings of the caches, keys and values written at each row's own position, and
// single elements picked from a GPU's log-probabilities. The tensors are addressed in bytes: row r of
// `src` starts r * src_stride bytes after src.raw_data(), row r of `dst` r * dst_stride bytes after
// dst.raw_data(); a row's first bytes are contiguous. src and dst are on one device.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "kernels/gather.h"

namespace dragoman::ops {

// Row i of dst gets the first row_bytes bytes of row rows[i] of src, for i < rows.size(). On a GPU
// the indices are read from device_rows (i32 [rows.size()] on that GPU: the same values, uploaded
// once by a caller that gathers several tensors) or, when it is undefined, uploaded here.
void gather_row_prefixes(const Tensor& src, std::int64_t src_stride, Tensor& dst, std::int64_t dst_stride,
                         const std::vector<std::int32_t>& rows, std::int64_t row_bytes,
                         const Tensor& device_rows = Tensor());

// The same with each output row's own prefix: row_bytes[i] bytes for output row i. CPU tensors only
// (on a GPU the caches are gathered with the longest prefix; the rest of a row is never read).
void gather_row_prefixes(const Tensor& src, std::int64_t src_stride, Tensor& dst, std::int64_t dst_stride,
                         const std::vector<std::int32_t>& rows, const std::vector<std::int64_t>& row_bytes);

// The reverse: row rows[i] of dst gets the first row_bytes bytes of row i of src (rows distinct).
void scatter_row_prefixes(const Tensor& src, std::int64_t src_stride, Tensor& dst, std::int64_t dst_stride,
                          const std::vector<std::int32_t>& rows, std::int64_t row_bytes);

// "Row i becomes old row rows[i]" done in place on every block at once (a decoder's caches of every
// layer, CPU memory): rows that stay are not copied, and the blocks keep their memory. units[i]:
// the prefix length, in units (cache positions), that new row i needs (cpu::plan_row_moves).
using RowBlock = cpu::RowBlock;
void move_rows_in_place(const std::vector<std::int32_t>& rows, const std::vector<std::int64_t>& units,
                        const std::vector<RowBlock>& blocks);

}  // namespace dragoman::ops
