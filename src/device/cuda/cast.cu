// Element type casts on CUDA (see cast.h): one thread per element, grid-stride loop.
#include "device/cuda/cast.h"

#include <algorithm>

#include "device/cuda/check.h"

namespace dragoman::cuda {
namespace {

template <typename From, typename To>
__global__ void cast_kernel(const From* in, To* out, std::size_t n) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = from_float<To>(to_float(in[i]));
  }
}

}  // namespace

template <typename From, typename To>
void cast(const From* in, To* out, std::size_t n, Stream stream) {
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535));
  cast_kernel<From, To><<<blocks, kThreads, 0, stream>>>(in, out, n);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template void cast<float, bf16>(const float*, bf16*, std::size_t, Stream);
template void cast<float, f16>(const float*, f16*, std::size_t, Stream);
template void cast<bf16, float>(const bf16*, float*, std::size_t, Stream);
template void cast<f16, float>(const f16*, float*, std::size_t, Stream);

}  // namespace dragoman::cuda
