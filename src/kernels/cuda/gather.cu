// Row gathers on CUDA (see gather.h).
#include "kernels/gather.h"

#include <cstdint>

#include "device/cuda/check.h"
#include "kernels/cuda/launch.cuh"

namespace dragoman::cuda {
namespace {

// Output row i, word w (W-byte words): grid-stride over count x words.
template <typename W>
__global__ void gather_kernel(const W* src, std::int64_t src_stride, W* dst, std::int64_t dst_stride,
                              const std::int32_t* rows, std::int64_t count, std::int64_t words) {
  for (std::int64_t n = launch::first_index(); n < count * words; n += launch::grid_stride()) {
    const std::int64_t i = n / words, w = n % words;
    dst[i * dst_stride + w] = src[rows[i] * src_stride + w];
  }
}

// Input row i, word w, to output row rows[i] (the rows distinct).
template <typename W>
__global__ void scatter_kernel(const W* src, std::int64_t src_stride, W* dst, std::int64_t dst_stride,
                               const std::int32_t* rows, std::int64_t count, std::int64_t words) {
  for (std::int64_t n = launch::first_index(); n < count * words; n += launch::grid_stride()) {
    const std::int64_t i = n / words, w = n % words;
    dst[rows[i] * dst_stride + w] = src[i * src_stride + w];
  }
}

template <typename W, bool kScatter>
void launch_copy(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride, const std::int32_t* rows,
                 std::int64_t count, std::int64_t row_bytes, Stream stream) {
  const auto size = static_cast<std::int64_t>(sizeof(W));
  const auto blocks = launch::blocks_for(count * (row_bytes / size));
  if constexpr (kScatter) {
    scatter_kernel<W><<<blocks, launch::kThreads, 0, stream>>>(static_cast<const W*>(src), src_stride / size,
                                                               static_cast<W*>(dst), dst_stride / size, rows, count,
                                                               row_bytes / size);
  } else {
    gather_kernel<W><<<blocks, launch::kThreads, 0, stream>>>(static_cast<const W*>(src), src_stride / size,
                                                              static_cast<W*>(dst), dst_stride / size, rows, count,
                                                              row_bytes / size);
  }
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

// The widest words every size and stride allows.
template <bool kScatter>
void copy_rows(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride, const std::int32_t* rows,
               std::int64_t count, std::int64_t row_bytes, Stream stream) {
  if (count == 0 || row_bytes == 0) return;
  const auto aligned = [&](std::int64_t to) {
    return reinterpret_cast<std::uintptr_t>(src) % to == 0 && reinterpret_cast<std::uintptr_t>(dst) % to == 0 &&
           src_stride % to == 0 && dst_stride % to == 0 && row_bytes % to == 0;
  };
  if (aligned(4)) {
    return launch_copy<std::uint32_t, kScatter>(src, src_stride, dst, dst_stride, rows, count, row_bytes, stream);
  }
  if (aligned(2)) {
    return launch_copy<std::uint16_t, kScatter>(src, src_stride, dst, dst_stride, rows, count, row_bytes, stream);
  }
  launch_copy<std::uint8_t, kScatter>(src, src_stride, dst, dst_stride, rows, count, row_bytes, stream);
}

}  // namespace

void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes, Stream stream) {
  copy_rows<false>(src, src_stride, dst, dst_stride, rows, count, row_bytes, stream);
}

void scatter_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                          const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes, Stream stream) {
  copy_rows<true>(src, src_stride, dst, dst_stride, rows, count, row_bytes, stream);
}

}  // namespace dragoman::cuda
