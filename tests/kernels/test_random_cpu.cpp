// cpu::uniform_fill: element i is philox::uniform(seed, rng_stream, offset + i), whatever the split.
#include <catch2/catch.hpp>

#include <vector>

#include "base/philox.h"
#include "kernels/random.h"

TEST_CASE("cpu::uniform_fill is position-based: two halves equal one fill", "[random]") {
  const std::size_t n = 1001;
  std::vector<float> whole(n), halves(n);
  dragoman::cpu::uniform_fill(whole.data(), n, 7, 11, 100);
  dragoman::cpu::uniform_fill(halves.data(), 500, 7, 11, 100);
  dragoman::cpu::uniform_fill(halves.data() + 500, n - 500, 7, 11, 600);
  CHECK(whole == halves);
  CHECK(whole[3] == dragoman::philox::uniform(7, 11, 103));
}
