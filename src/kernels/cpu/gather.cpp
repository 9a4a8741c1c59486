// Row gathers (see gather.h).
#include "kernels/cpu/gather.h"

#include <cstring>

namespace dragoman::cpu {

namespace {

// Copies of at least this many bytes in all are shared by the OpenMP threads (the decoder's caches,
// megabytes a step); smaller ones are not worth waking them.
constexpr std::int64_t kParallelBytes = 1 << 18;

}  // namespace

void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes) {
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dst);
#pragma omp parallel for schedule(static) if (count * row_bytes >= kParallelBytes)
  for (std::int64_t i = 0; i < count; ++i) {
    std::memcpy(to + i * dst_stride, from + rows[i] * src_stride, static_cast<std::size_t>(row_bytes));
  }
}

void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, const std::int64_t* row_bytes) {
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dst);
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < count; ++i) total += row_bytes[i];
#pragma omp parallel for schedule(static) if (total >= kParallelBytes)
  for (std::int64_t i = 0; i < count; ++i) {
    std::memcpy(to + i * dst_stride, from + rows[i] * src_stride, static_cast<std::size_t>(row_bytes[i]));
  }
}

void scatter_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                          const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes) {
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dst);
  for (std::int64_t i = 0; i < count; ++i) {
    std::memcpy(to + rows[i] * dst_stride, from + i * src_stride, static_cast<std::size_t>(row_bytes));
  }
}

}  // namespace dragoman::cpu
