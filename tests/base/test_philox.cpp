// Philox4x32-10 against the Random123 known-answer vectors (also checked against randomgen's
// independent implementation), and the properties the trainer relies on.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "base/philox.h"
#include "model/layers.h"

using namespace dragoman::philox;

TEST_CASE("philox4x32_10 matches the Random123 known-answer vectors", "[philox]") {
  const Block zero = philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  CHECK(zero.v[0] == 0x6627e8d5u);
  CHECK(zero.v[1] == 0xe169c58du);
  CHECK(zero.v[2] == 0xbc57ac4cu);
  CHECK(zero.v[3] == 0x9b00dbd8u);
  const Block ones = philox4x32_10({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  CHECK(ones.v[0] == 0x408f276du);
  CHECK(ones.v[1] == 0x41c83b0eu);
  CHECK(ones.v[2] == 0xa20bc7c6u);
  CHECK(ones.v[3] == 0x6d5451fdu);
  const Block pi = philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  CHECK(pi.v[0] == 0xd16cfe09u);
  CHECK(pi.v[1] == 0x94fdccebu);
  CHECK(pi.v[2] == 0x5001e420u);
  CHECK(pi.v[3] == 0x24126ea1u);
}

TEST_CASE("bits is a pure function of seed, stream and index", "[philox]") {
  // Element 6 of stream 7, seed 42 is word 2 of block (counter 1, 0, 7, 0), key (42, 0).
  CHECK(bits(42, 7, 6) == philox4x32_10({{1, 0, 7, 0}}, 42, 0).v[2]);
  CHECK(bits(42, 7, 6) == bits(42, 7, 6));
  CHECK(bits(42, 7, 6) != bits(43, 7, 6));
  CHECK(bits(42, 7, 6) != bits(42, 8, 6));
  CHECK(bits(42, 7, 6) != bits(42, 7, 7));
  // The high words of seed, stream and index matter too.
  CHECK(bits(42, 7, 6) != bits(42 + (std::uint64_t{1} << 32), 7, 6));
  CHECK(bits(42, 7, 6) != bits(42, 7 + (std::uint64_t{1} << 32), 6));
  CHECK(bits(42, 7, 6) != bits(42, 7, 6 + (std::uint64_t{4} << 32)));
}

TEST_CASE("uniform lies in the half-open unit interval with the right mean and no repeats in a short run", "[philox]") {
  double sum = 0.0;
  std::set<float> seen;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = uniform(2026, 3, static_cast<std::uint64_t>(i));
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    sum += u;
    if (i < 1000) seen.insert(u);
  }
  CHECK(std::fabs(sum / n - 0.5) < 0.005);  // 5 sigma is 0.0046
  CHECK(seen.size() >= 995);
}

TEST_CASE("Random numbers of different purposes never share a stream", "[philox]") {
  using dragoman::philox::Purpose;
  using dragoman::philox::purpose_stream;
  // The purpose takes the top 4 bits, whatever the value asks for.
  CHECK(purpose_stream(Purpose::kInit, 5) == 5);
  CHECK(purpose_stream(Purpose::kDropout, 5) == ((std::uint64_t{1} << 60) | 5));
  CHECK(purpose_stream(Purpose::kData, ~std::uint64_t{0}) >> 60 == 0xB);
  // Dropout site 3 of the first batch is not parameter 3's initialisation (they once were).
  const dragoman::model::Dropout site = [] {
    dragoman::model::DropoutSites sites(7, 0);
    for (int i = 0; i < 3; ++i) sites.next(0.1);
    return sites.next(0.1);
  }();
  CHECK(site.rng_stream == purpose_stream(Purpose::kDropout, 3));
  CHECK(site.rng_stream != purpose_stream(Purpose::kInit, 3));
  // Batches and ranks have their own bits; beyond them is an error, never a wrap-around.
  CHECK(dragoman::model::DropoutSites(7, 5, 2).next(0.1).rng_stream ==
        purpose_stream(Purpose::kDropout, (std::uint64_t{2} << 48) | (std::uint64_t{5} << 24)));
  CHECK_THROWS_WITH(dragoman::model::DropoutSites(7, std::uint64_t{1} << 24),
                    Catch::Contains("beyond the random streams of dropout"));
  CHECK_THROWS(dragoman::model::DropoutSites(7, 0, std::uint64_t{1} << 12));
}
