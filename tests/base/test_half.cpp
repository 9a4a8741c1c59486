// bf16 and f16 (base/half.h): rounding from float32 agrees bit for bit with two independent
// implementations (ml_dtypes' bfloat16, numpy's float16; tests/base/gen_half_fixtures.py) on special
// values, ties, subnormals and random bit patterns of every exponent; widening back is exact; NaN
// stays NaN. Tensors convert to and from them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "base/half.h"
#include "core/tensor.h"
#include "kernels/cpu/cast.h"

#ifndef DRAGOMAN_TEST_FIXTURES
#error "DRAGOMAN_TEST_FIXTURES must point at tests/fixtures"
#endif

namespace dragoman {
namespace {

float from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

TEST_CASE("bf16 and f16 round float32 to nearest even, as ml_dtypes and numpy do", "[core]") {
  std::ifstream in(std::string(DRAGOMAN_TEST_FIXTURES) + "/half/cases.txt");
  REQUIRE(in);
  std::string line;
  int cases = 0, bf16_wrong = 0, f16_wrong = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    unsigned int f32 = 0, expect_bf16 = 0, expect_f16 = 0;
    REQUIRE(std::sscanf(line.c_str(), "%x %x %x", &f32, &expect_bf16, &expect_f16) == 3);
    const float value = from_bits(f32);
    const std::uint16_t got_bf16 = bf16::from_float(value).bits, got_f16 = f16::from_float(value).bits;
    if (got_bf16 != expect_bf16 && ++bf16_wrong <= 5) {
      FAIL_CHECK("bf16 of " << line.substr(0, 8) << ": got " << std::hex << got_bf16 << ", expected " << expect_bf16);
    }
    if (got_f16 != expect_f16 && ++f16_wrong <= 5) {
      FAIL_CHECK("f16 of " << line.substr(0, 8) << ": got " << std::hex << got_f16 << ", expected " << expect_f16);
    }
    // Widening is exact: the rounded value read back and rounded again is itself.
    CHECK(bf16::from_float(bf16::from_bits(got_bf16).to_float()).bits == got_bf16);
    CHECK(f16::from_float(f16::from_bits(got_f16).to_float()).bits == got_f16);
    ++cases;
  }
  CHECK(cases > 10000);
  CHECK(bf16_wrong == 0);
  CHECK(f16_wrong == 0);
}

TEST_CASE("bf16 and f16 widen to float32 exactly", "[core]") {
  CHECK(bf16::from_bits(0x3F80).to_float() == 1.0f);
  CHECK(bf16::from_bits(0xC049).to_float() == -3.140625f);
  CHECK(bf16::from_bits(0x7F7F).to_float() == from_bits(0x7F7F0000u));
  CHECK(f16::from_bits(0x3C00).to_float() == 1.0f);
  CHECK(f16::from_bits(0x7BFF).to_float() == 65504.0f);
  CHECK(f16::from_bits(0x0400).to_float() == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(f16::from_bits(0x0001).to_float() == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(f16::from_bits(0x03FF).to_float() == std::ldexp(1023.0f, -24));
  CHECK(f16::from_bits(0x8000).to_float() == 0.0f);
  CHECK(std::signbit(f16::from_bits(0x8000).to_float()));
  CHECK(f16::from_bits(0xFC00).to_float() == -std::numeric_limits<float>::infinity());
  // Every f16 value widens and narrows back to itself (NaNs: to a NaN).
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const f16 h = f16::from_bits(static_cast<std::uint16_t>(b));
    const float f = h.to_float();
    if (std::isnan(f)) {
      CHECK(((b >> 10) & 0x1F) == 0x1F);
      CHECK((b & 0x3FF) != 0);
    } else if (f16::from_float(f).bits != h.bits) {
      FAIL_CHECK("f16 " << std::hex << b << " does not round-trip");
    }
  }
}

TEST_CASE("NaN stays a NaN of the same sign, infinities stay infinite", "[core]") {
  for (const std::uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFFC00000u, 0x7FFFFFFFu, 0xFF800001u}) {
    const float value = from_bits(nan);
    const float b = bf16::from_float(value).to_float(), h = f16::from_float(value).to_float();
    CHECK(std::isnan(b));
    CHECK(std::isnan(h));
    CHECK(std::signbit(b) == std::signbit(value));
    CHECK(std::signbit(h) == std::signbit(value));
  }
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(bf16::from_float(inf).bits == 0x7F80);
  CHECK(bf16::from_float(-inf).bits == 0xFF80);
  CHECK(f16::from_float(inf).bits == 0x7C00);
  CHECK(f16::from_float(-inf).bits == 0xFC00);
  CHECK(f16::from_float(65520.0f).bits == 0x7C00);  // the tie above the largest finite rounds to infinity
  CHECK(f16::from_float(std::nextafter(65520.0f, 0.0f)).bits == 0x7BFF);
  CHECK(bits_of(bf16::from_float(std::numeric_limits<float>::max()).to_float()) == 0x7F800000u);
}

TEST_CASE("Tensors convert to and from bf16 and f16", "[core]") {
  const std::vector<float> values = {0.0f, 1.0f, -2.5f, 3.14159265f, 1e-6f, 65504.0f, 1e5f, -0.0f};
  const Tensor t = Tensor::from_vector(values, {2, 4});
  for (const DType dtype : {DType::kBF16, DType::kF16}) {
    const Tensor h = t.to(dtype);
    CHECK(h.dtype() == dtype);
    CHECK(h.nbytes() == 16);
    const std::vector<float> back = h.to(DType::kF32).to_vector<float>();
    const std::vector<double> back64 = h.to(DType::kF64).to_vector<double>();
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float expected =
          dtype == DType::kBF16 ? bf16::from_float(values[i]).to_float() : f16::from_float(values[i]).to_float();
      CHECK(bits_of(back[i]) == bits_of(expected));
      CHECK(back64[i] == static_cast<double>(expected));
    }
  }
  CHECK(t.to(DType::kF16).to_vector<f16>()[6].bits == 0x7C00);  // 1e5: beyond f16
  CHECK(t.to(DType::kBF16).to_vector<bf16>()[1].bits == 0x3F80);
  // From f64 and i32 as well, and between the two 16-bit types.
  CHECK(Tensor::from_vector<double>({0.1, -7.0}, {2}).to(DType::kBF16).to_vector<bf16>()[0].bits ==
        bf16::from_float(0.1f).bits);
  CHECK(Tensor::from_vector<std::int32_t>({3, -70000}, {2}).to(DType::kF16).to_vector<f16>()[1].bits == 0xFC00);
  CHECK(t.to(DType::kBF16).to(DType::kF16).to_vector<f16>()[1].bits == 0x3C00);
  Tensor zeros = Tensor::zeros({3}, DType::kBF16);
  CHECK(zeros.to_vector<bf16>()[2].bits == 0);
}

TEST_CASE("cpu::cast rounds and widens element by element, in parallel or not", "[core]") {
  std::vector<float> values(70000);  // above the size that turns on the OpenMP loop
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::ldexp(static_cast<float>(i) - 35000.5f, -7);
  std::vector<bf16> b(values.size());
  std::vector<f16> h(values.size());
  std::vector<float> back(values.size());
  cpu::cast(values.data(), b.data(), values.size());
  cpu::cast(values.data(), h.data(), values.size());
  bool all_equal = true;
  for (std::size_t i = 0; i < values.size(); ++i) {
    all_equal =
        all_equal && b[i].bits == bf16::from_float(values[i]).bits && h[i].bits == f16::from_float(values[i]).bits;
  }
  CHECK(all_equal);
  cpu::cast(h.data(), back.data(), h.size());
  CHECK(back[0] == h[0].to_float());
  CHECK(back[69999] == h[69999].to_float());
  cpu::cast(b.data(), back.data(), b.size());
  CHECK(back[12345] == b[12345].to_float());
}

}  // namespace dragoman
