// Copies between strided views of the same shape: the CPU spec of cuda::copy_strided
// (device/cuda/copy.h), and the dimension collapsing Tensor::copy_from uses to pick a plain or a
// pitched (2D) copy. Strides are in elements and non-negative; element i of the row-major order of
// `shape` is read at sum(index_d * src_strides[d]) and written at sum(index_d * dst_strides[d]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dragoman {

// dst[...] = src[...] for every element of `shape` [rank]; elem_bytes per element. The views must
// not overlap (src and dst may share a storage, as two disjoint views of it).
void copy_strided(const void* src, const std::int64_t* src_strides, void* dst, const std::int64_t* dst_strides,
                  const std::int64_t* shape, int rank, std::size_t elem_bytes);

// The same element mapping with fewer dimensions: dimensions of size 1 are dropped, and a
// dimension is merged into the next inner one when both views step over it as over one dense
// block (stride[d] == stride[d + 1] * shape[d + 1] in src and in dst). A copy of two contiguous
// views collapses to rank 1 with unit strides (rank 0 for a single element).
struct CollapsedCopy {
  std::vector<std::int64_t> shape, src_strides, dst_strides;
};
CollapsedCopy collapse_copy(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& src_strides,
                            const std::vector<std::int64_t>& dst_strides);

}  // namespace dragoman
