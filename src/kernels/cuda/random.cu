// Random fills on CUDA (see random.h): one thread per element, grid-stride loop, the same
// philox::uniform as the CPU spec.
#include "kernels/random.h"

#include <algorithm>

#include "base/philox.h"
#include "device/cuda/check.h"

namespace dragoman::cuda {
namespace {

__global__ void uniform_fill_kernel(float* out, std::size_t n, std::uint64_t seed, std::uint64_t rng_stream,
                                    std::uint64_t offset) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = philox::uniform(seed, rng_stream, offset + i);
  }
}

}  // namespace

void uniform_fill(float* out, std::size_t n, std::uint64_t seed, std::uint64_t rng_stream, std::uint64_t offset,
                  Stream stream) {
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535));
  uniform_fill_kernel<<<blocks, kThreads, 0, stream>>>(out, n, seed, rng_stream, offset);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dragoman::cuda
