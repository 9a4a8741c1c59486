// Random fills on CUDA, twins of kernels/cpu/random.h: same arguments plus a stream, same bits.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dragoman::cuda {

// out: device pointer [n]. Asynchronous on `stream`; errors are checked at launch.
void uniform_fill(float* out, std::size_t n, std::uint64_t seed, std::uint64_t rng_stream, std::uint64_t offset,
                  cudaStream_t stream);

}  // namespace dragoman::cuda
