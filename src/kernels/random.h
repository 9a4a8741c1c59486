// Random fills, the CPU spec (the CUDA twins below compute the same bits).
// Element i of the output is philox::uniform(seed, rng_stream, offset + i): a pure function of its
// position, so any split of the work, on any device, gives the same values.
//
// CUDA (namespace cuda):
// Random fills on CUDA, twins of the CPU spec above: same arguments plus a stream, same bits.
// Naming: `rng_stream` is the Philox counter stream (the CPU spec calls it `stream`), `stream` the
// CUDA stream (device/cuda/stream.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/cuda/stream.h"

namespace dragoman::cpu {

// out[i] = uniform in [0, 1) for element offset + i of (seed, rng_stream).   out: [n]
void uniform_fill(float* out, std::size_t n, std::uint64_t seed, std::uint64_t rng_stream, std::uint64_t offset);

}  // namespace dragoman::cpu

namespace dragoman::cuda {

// out: device memory [n] of the stream's device (the caller holds its DeviceGuard). Asynchronous on
// `stream`; errors are checked at launch.
void uniform_fill(float* out, std::size_t n, std::uint64_t seed, std::uint64_t rng_stream, std::uint64_t offset,
                  Stream stream);

}  // namespace dragoman::cuda
