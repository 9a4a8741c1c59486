// Random fills on CUDA, twins of kernels/cpu/random.h: same arguments plus a stream, same bits.
// Naming: `rng_stream` is the Philox counter stream (the CPU spec calls it `stream`), `stream` the
// CUDA stream (device/cuda/stream.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/cuda/stream.h"

namespace dragoman::cuda {

// out: device memory [n] of the stream's device (the caller holds its DeviceGuard). Asynchronous on
// `stream`; errors are checked at launch.
void uniform_fill(float* out, std::size_t n, std::uint64_t seed, std::uint64_t rng_stream, std::uint64_t offset,
                  Stream stream);

}  // namespace dragoman::cuda
