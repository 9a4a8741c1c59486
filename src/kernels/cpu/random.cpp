// Random fills on the CPU (see random.h).
#include "kernels/random.h"

#include "base/philox.h"

namespace dragoman::cpu {

void uniform_fill(float* out, std::size_t n, std::uint64_t seed, std::uint64_t rng_stream, std::uint64_t offset) {
  for (std::size_t i = 0; i < n; ++i) out[i] = philox::uniform(seed, rng_stream, offset + i);
}

}  // namespace dragoman::cpu
