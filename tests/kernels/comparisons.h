// What parity tests share, with or without CUDA (tests/cuda/parity_testing.h adds device buffers):
// random inputs of a storage type from fixed seeds, and comparisons of a kernel's output with its
// CPU spec's, bit for bit or within a stated tolerance, printing the first mismatches; the
// tolerances' building blocks (one rounding of T, its subnormal spacing, a sum's reordering).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "base/numeric.h"

namespace dragoman::test {

// n values of T: uniform in [lo, hi) rounded once to T, from `seed`.
template <typename T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  std::vector<T> values(n);
  for (T& v : values) v = store<T>(static_cast<acc_t<T>>(uniform(rng)));
  return values;
}

template <typename T>
double as_double(T v) {
  return static_cast<double>(load(v));
}

// Every element of `got` has the bits of `expected`'s.
template <typename T>
void check_bits(const std::vector<T>& got, const std::vector<T>& expected, const std::string& what) {
  REQUIRE(got.size() == expected.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &expected[i], sizeof(T)) != 0 && mismatches++ < 5) {
      std::printf("%s: element %zu of %zu is %.9g, expected %.9g\n", what.c_str(), i, got.size(), as_double(got[i]),
                  as_double(expected[i]));
    }
  }
  INFO(what << ": " << mismatches << " of " << got.size() << " elements differ");
  CHECK(mismatches == 0);
}

// |got[i] - expected[i]| <= tolerance(i) for every i.
template <typename T>
void check_close(const std::vector<T>& got, const std::vector<T>& expected,
                 const std::function<double(std::size_t)>& tolerance, const std::string& what) {
  REQUIRE(got.size() == expected.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double a = as_double(got[i]), b = as_double(expected[i]);
    if (!(std::fabs(a - b) <= tolerance(i)) && mismatches++ < 5) {
      std::printf("%s: element %zu of %zu is %.9g, expected %.9g (tolerance %.3g)\n", what.c_str(), i, got.size(), a, b,
                  tolerance(i));
    }
  }
  INFO(what << ": " << mismatches << " of " << got.size() << " elements outside the tolerance");
  CHECK(mismatches == 0);
}

// The unit roundoff of T (half an ulp of 1): the error of one rounding to T, relative.
template <typename T>
double unit_roundoff() {
  if constexpr (std::is_same_v<T, double>) return 0x1p-53;
  if constexpr (std::is_same_v<T, float>) return 0x1p-24;
  if constexpr (std::is_same_v<T, f16>) return 0x1p-11;
  return 0x1p-8;  // bf16
}

// The spacing of T's subnormals (f16: 2^-24, about 6e-8): below the smallest normal number a
// rounding's error is absolute, up to half of it, so "within one rounding" needs this floor too
// (an f16 attention gradient of 2.7e-5 rounded the other way on an H200 was one spacing off).
template <typename T>
double subnormal_spacing() {
  if constexpr (std::is_same_v<T, double>) return 0x1p-1074;
  if constexpr (std::is_same_v<T, float>) return 0x1p-149;
  if constexpr (std::is_same_v<T, f16>) return 0x1p-24;
  return 0x1p-133;  // bf16
}

// The relative error allowed for a sum of up to 32000 terms in acc_t<T> when the CPU adds them in
// index order and the GPU in another fixed order: both errors are bounded by (terms) * u times the
// sum of magnitudes, and random-sign terms stay far below that; 1e-5 (float) or 1e-13 (double)
// of the magnitudes is generous for these sizes and still catches a term that is missing or
// counted twice.
template <typename T>
double reorder_tolerance() {
  return std::is_same_v<acc_t<T>, double> ? 1e-13 : 1e-5;
}

}  // namespace dragoman::test
