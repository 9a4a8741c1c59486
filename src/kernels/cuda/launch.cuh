// Launch helpers shared by the element-wise CUDA kernels (private to kernels/cuda/*.cu).
#pragma once

#include <algorithm>
#include <cstdint>

namespace dragoman::cuda::launch {

inline constexpr unsigned kThreads = 256;

// Blocks for a grid-stride loop over n items of kThreads threads each (at most 2^16 blocks: enough
// to fill any GPU, and each thread then loops).
inline unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, std::int64_t{1} << 16));
}

// The first index of this thread and the stride of a grid-stride loop.
__device__ inline std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

}  // namespace dragoman::cuda::launch
