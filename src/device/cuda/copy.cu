// Strided copies on CUDA (see copy.h): one thread per element in a grid-stride loop; each thread
// turns its row-major index into the two offsets. The layout travels by value as a kernel argument.
#include "device/cuda/copy.h"

#include <algorithm>
#include <string>

#include "device/cuda/check.h"

namespace dragoman::cuda {
namespace {

struct Layout {
  int rank;
  std::int64_t shape[kMaxCopyRank];
  std::int64_t src_strides[kMaxCopyRank];
  std::int64_t dst_strides[kMaxCopyRank];
};

// Word is an unsigned integer of the element's size: the copy moves bits, whatever the dtype.
template <typename Word>
__global__ void copy_strided_kernel(const Word* src, Word* dst, Layout layout, std::int64_t n) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    std::int64_t rest = i, from = 0, to = 0;
    for (int d = layout.rank - 1; d >= 0; --d) {
      const std::int64_t index = rest % layout.shape[d];
      rest /= layout.shape[d];
      from += index * layout.src_strides[d];
      to += index * layout.dst_strides[d];
    }
    dst[to] = src[from];
  }
}

template <typename Word>
void launch(const void* src, void* dst, const Layout& layout, std::int64_t n, Stream stream) {
  constexpr unsigned kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535));
  copy_strided_kernel<Word>
      <<<blocks, kThreads, 0, stream>>>(static_cast<const Word*>(src), static_cast<Word*>(dst), layout, n);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void copy_strided(const void* src, const std::int64_t* src_strides, void* dst, const std::int64_t* dst_strides,
                  const std::int64_t* shape, int rank, std::size_t elem_bytes, Stream stream) {
  if (rank < 0 || rank > kMaxCopyRank) {
    throw Error("cuda::copy_strided: rank " + std::to_string(rank) + " (at most " + std::to_string(kMaxCopyRank) +
                " dimensions after collapsing)");
  }
  Layout layout{};
  layout.rank = rank;
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) {
    layout.shape[d] = shape[d];
    layout.src_strides[d] = src_strides[d];
    layout.dst_strides[d] = dst_strides[d];
    n *= shape[d];
  }
  if (n == 0) return;
  switch (elem_bytes) {
    case 1: launch<std::uint8_t>(src, dst, layout, n, stream); return;
    case 2: launch<std::uint16_t>(src, dst, layout, n, stream); return;
    case 4: launch<std::uint32_t>(src, dst, layout, n, stream); return;
    case 8: launch<std::uint64_t>(src, dst, layout, n, stream); return;
    default: throw Error("cuda::copy_strided: element size " + std::to_string(elem_bytes) + " (expected 1, 2, 4, 8)");
  }
}

}  // namespace dragoman::cuda
