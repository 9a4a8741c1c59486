// Strided copies on the CPU (see strided_copy.h).
#include "core/strided_copy.h"

#include <cstring>

namespace dragoman {

CollapsedCopy collapse_copy(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& src_strides,
                            const std::vector<std::int64_t>& dst_strides) {
  CollapsedCopy c;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!c.shape.empty() && c.src_strides.back() == src_strides[d] * shape[d] &&
        c.dst_strides.back() == dst_strides[d] * shape[d]) {
      c.shape.back() *= shape[d];  // the outer dimension steps over this one densely: one dimension
      c.src_strides.back() = src_strides[d];
      c.dst_strides.back() = dst_strides[d];
      continue;
    }
    c.shape.push_back(shape[d]);
    c.src_strides.push_back(src_strides[d]);
    c.dst_strides.push_back(dst_strides[d]);
  }
  return c;
}

// The trailing dimensions that are dense in both views are copied as one run per memmove; an
// odometer walks the outer ones.
void copy_strided(const void* src, const std::int64_t* src_strides, void* dst, const std::int64_t* dst_strides,
                  const std::int64_t* shape, int rank, std::size_t elem_bytes) {
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[d];
  if (n == 0) return;
  int r = rank;
  std::int64_t run = 1;  // elements per memmove
  while (r > 0 && (shape[r - 1] == 1 || (src_strides[r - 1] == run && dst_strides[r - 1] == run))) {
    run *= shape[r - 1];
    --r;
  }
  const auto elem = static_cast<std::int64_t>(elem_bytes);
  const auto* from = static_cast<const char*>(src);
  auto* to = static_cast<char*>(dst);
  std::vector<std::int64_t> index(static_cast<std::size_t>(r), 0);
  std::int64_t src_offset = 0, dst_offset = 0;
  for (std::int64_t k = 0; k < n / run; ++k) {
    std::memmove(to + dst_offset * elem, from + src_offset * elem, static_cast<std::size_t>(run * elem));
    for (int i = r; i-- > 0;) {
      if (++index[static_cast<std::size_t>(i)] < shape[i]) {
        src_offset += src_strides[i];
        dst_offset += dst_strides[i];
        break;
      }
      src_offset -= src_strides[i] * (shape[i] - 1);
      dst_offset -= dst_strides[i] * (shape[i] - 1);
      index[static_cast<std::size_t>(i)] = 0;
    }
  }
}

}  // namespace dragoman
