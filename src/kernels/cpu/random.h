// Random fills, the CPU spec (the CUDA twins in kernels/cuda/random.h compute the same bits).
// Element i of the output is philox::uniform(seed, rng_stream, offset + i): a pure function of its
// position, so any split of the work, on any device, gives the same values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dragoman::cpu {

// out[i] = uniform in [0, 1) for element offset + i of (seed, rng_stream).   out: [n]
void uniform_fill(float* out, std::size_t n, std::uint64_t seed, std::uint64_t rng_stream, std::uint64_t offset);

}  // namespace dragoman::cpu
