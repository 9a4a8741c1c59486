// The f32 row kernels (kernels/cpu/vector_math.h): exp_approx within 1 ulp of std::exp over its
// range and exact at its edges, and the dispatched row functions (whatever vector width this CPU
// gets) against plain double-precision loops, on lengths around the vector widths.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/vector_math.h"

namespace dragoman {
namespace {

std::int64_t ulps_apart(float a, float b) {
  std::int32_t ia, ib;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  return std::abs(static_cast<std::int64_t>(ia) - static_cast<std::int64_t>(ib));
}

const std::int64_t kLengths[] = {0, 1, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 1000, 8000};

std::vector<float> random_row(std::int64_t n, std::uint32_t seed, float spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, spread);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (float& v : x) v = d(rng);
  return x;
}

}  // namespace

TEST_CASE("exp_approx: within 1 ulp of std::exp on [-87.3, 88.3], exact edges", "[kernels]") {
  std::int64_t worst = 0;
  float worst_at = 0;
  // Every 97th float from 0 to 88.3 and from -0 to -87.3 (about 23 million points).
  const auto sweep = [&](std::uint32_t sign, float limit) {
    for (std::uint32_t bits = 0;; bits += 97) {
      const std::uint32_t signed_bits = bits | sign;
      float x;
      std::memcpy(&x, &signed_bits, sizeof x);
      if (std::abs(x) > limit) break;
      const std::int64_t u = ulps_apart(cpu::exp_approx(x), std::exp(x));
      if (u > worst) {
        worst = u;
        worst_at = x;
      }
    }
  };
  sweep(0, 88.3f);
  sweep(0x80000000u, 87.3f);
  INFO("worst at " << worst_at);
  CHECK(worst <= 1);
  CHECK(cpu::exp_approx(0.0f) == 1.0f);
  CHECK(cpu::exp_approx(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(cpu::exp_approx(-100.0f) == 0.0f);
  CHECK(cpu::exp_approx(89.0f) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(cpu::exp_approx(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("vector_math row kernels equal plain double loops (within the sums' rounding)", "[kernels]") {
  for (const std::int64_t n : kLengths) {
    INFO("n = " << n);
    const std::vector<float> x = random_row(n, 1 + static_cast<std::uint32_t>(n), 3.0f);
    const std::vector<float> y = random_row(n, 1000 + static_cast<std::uint32_t>(n), 1.0f);
    double max_ref = -std::numeric_limits<double>::infinity(), sum_ref = 0, dot_ref = 0, abs_dot = 0;
    for (std::int64_t i = 0; i < n; ++i) max_ref = std::max(max_ref, static_cast<double>(x[i]));
    const float shift = n > 0 ? static_cast<float>(max_ref) : 0.0f;
    for (std::int64_t i = 0; i < n; ++i) {
      sum_ref += std::exp(static_cast<double>(x[i]) - shift);
      dot_ref += static_cast<double>(x[i]) * y[i];
      abs_dot += std::abs(static_cast<double>(x[i]) * y[i]);
    }
    const double eps = std::numeric_limits<float>::epsilon();
    CHECK(cpu::max_f32(x.data(), n) == static_cast<float>(max_ref));
    // Each exp within 1 ulp plus the shift's rounding, and the sum's rounding: n eps relative at most.
    CHECK(cpu::sum_exp_f32(x.data(), n, shift) == Approx(sum_ref).epsilon(4 * eps * (1 + std::sqrt(n))).margin(1e-30));
    std::vector<float> out(x.size());
    const float stored_sum = cpu::exp_store_f32(x.data(), n, shift, out.data());
    CHECK(stored_sum == cpu::sum_exp_f32(x.data(), n, shift));
    for (std::int64_t i = 0; i < n; ++i) CHECK(out[i] == cpu::exp_approx(x[i] - shift));
    CHECK(cpu::dot_f32(x.data(), y.data(), n) == Approx(dot_ref).margin(2 * eps * abs_dot + 1e-30));
    // Attention's loops: rows x, y and x again (stride n) weighted 0.5, 0 (skipped) and 0.25, added to
    // y in order of the rows, each product rounded: the same bits as the plain loop.
    std::vector<float> rows = x;
    rows.insert(rows.end(), y.begin(), y.end());
    rows.insert(rows.end(), x.begin(), x.end());
    const float weights[3] = {0.5f, 0.0f, 0.25f};
    std::vector<float> acc = y;
    cpu::add_weighted_rows_f32(weights, rows.data(), n, 3, n, acc.data());
    for (std::int64_t i = 0; i < n; ++i) {
      float expected = y[i];
      expected += 0.5f * x[i];
      expected += 0.25f * x[i];
      CHECK(acc[i] == expected);
    }
    // Query y against the keys x, y, x (each of size n): scaled dots and their maximum.
    float dots[3];
    const float largest = cpu::scaled_dots_f32(y.data(), rows.data(), n, 3, n, 0.5f, dots);
    double yy = 0;  // its terms are all positive: their sum is their magnitude
    for (std::int64_t i = 0; i < n; ++i) yy += static_cast<double>(y[i]) * y[i];
    CHECK(dots[0] == Approx(0.5 * dot_ref).margin(eps * abs_dot + 1e-30));
    CHECK(dots[1] == Approx(0.5 * yy).margin(eps * yy + 1e-30));
    CHECK(dots[2] == dots[0]);
    CHECK(largest == std::max(dots[0], dots[1]));
    std::vector<float> shifted = x;
    cpu::subtract_f32(shifted.data(), n, 1.25f);
    for (std::int64_t i = 0; i < n; ++i) CHECK(shifted[i] == x[i] - 1.25f);
  }
}

TEST_CASE("vector_math: attention's loops over many rows (four at a time, then one by one)", "[kernels]") {
  const double eps = std::numeric_limits<float>::epsilon();
  for (const std::int64_t n : kLengths) {
    INFO("n = " << n);
    const std::int64_t count = 11, stride = n + 3;  // two runs of four rows, three left; padded rows
    const std::vector<float> rows = random_row(count * stride, 7 + static_cast<std::uint32_t>(n), 2.0f);
    const std::vector<float> q = random_row(n, 8 + static_cast<std::uint32_t>(n), 1.0f);
    std::vector<float> weights = random_row(count, 9, 1.0f);
    for (const bool with_zero : {false, true}) {
      if (with_zero) weights[5] = 0.0f;  // a zero weight in the second run: that row is skipped
      std::vector<float> acc = q, expected = q;
      cpu::add_weighted_rows_f32(weights.data(), rows.data(), stride, count, n, acc.data());
      for (std::int64_t s = 0; s < count; ++s) {
        if (weights[s] == 0.0f) continue;
        for (std::int64_t i = 0; i < n; ++i) expected[i] += weights[s] * rows[s * stride + i];
      }
      CHECK(acc == expected);  // in order of the rows, each product rounded: the plain loop's bits
    }
    std::vector<float> dots(static_cast<std::size_t>(count));
    const float largest = cpu::scaled_dots_f32(q.data(), rows.data(), stride, count, n, 0.125f, dots.data());
    float expected_largest = -std::numeric_limits<float>::infinity();
    for (std::int64_t s = 0; s < count; ++s) {
      double dot = 0, magnitude = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        dot += static_cast<double>(q[i]) * rows[s * stride + i];
        magnitude += std::abs(static_cast<double>(q[i]) * rows[s * stride + i]);
      }
      CHECK(dots[s] == Approx(0.125 * dot).margin(0.125 * 2 * eps * magnitude + 1e-30));
      expected_largest = std::max(expected_largest, dots[s]);
    }
    CHECK(largest == expected_largest);
  }
}

TEST_CASE("vector_math: dequantize_row_f32 equals the plain loop bit for bit", "[kernels]") {
  for (const std::int64_t n : kLengths) {
    INFO("n = " << n);
    std::vector<std::int32_t> products(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) products[j] = static_cast<std::int32_t>((j * 7919) % 40001) - 20000;
    const std::vector<float> sw = random_row(n, 11, 0.01f), bias = random_row(n, 12, 3.0f);
    for (const bool with_bias : {false, true}) {
      for (const bool relu : {false, true}) {
        std::vector<float> y(static_cast<std::size_t>(n));
        cpu::dequantize_row_f32(products.data(), 0.003f, sw.data(), n, with_bias ? bias.data() : nullptr, relu,
                                y.data());
        for (std::int64_t j = 0; j < n; ++j) {
          float value = static_cast<float>(products[j]) * 0.003f * sw[j];
          if (with_bias) value += bias[j];
          if (relu && !(value > 0.0f)) value = 0.0f;
          CHECK(y[j] == value);
        }
      }
    }
  }
}

TEST_CASE("vector_math: int8 row quantization equals std::nearbyint, ties to even, clamped", "[kernels]") {
  for (const std::int64_t n : kLengths) {
    INFO("n = " << n);
    std::vector<float> x = random_row(n, 7 + static_cast<std::uint32_t>(n), 2.0f);
    // Exact ties (k + 1/2 steps of 0.5) and the ends of the range.
    for (std::int64_t i = 0; i < n; i += 3) x[i] = 0.25f * static_cast<float>(i % 11 - 5) + 0.125f;
    double largest = 0;
    for (const float v : x) largest = std::max(largest, static_cast<double>(std::abs(v)));
    CHECK(cpu::max_abs_f32(x.data(), n) == static_cast<float>(largest));
    for (const float scale : {static_cast<float>(largest) / 127.0f, 0.25f, 0.01f}) {
      if (!(scale > 0)) continue;
      std::vector<std::int8_t> q(x.size());
      cpu::quantize_row_f32(x.data(), n, scale, q.data());
      for (std::int64_t i = 0; i < n; ++i) {
        const float expected = std::min(127.0f, std::max(-127.0f, std::nearbyint(x[i] / scale)));
        CHECK(static_cast<int>(q[i]) == static_cast<int>(expected));
      }
    }
  }
}

TEST_CASE("vector_math: max_f32 ignores NaN entries, -inf for an empty row", "[kernels]") {
  std::vector<float> x = {1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f, -2.0f};
  for (int i = 0; i < 40; ++i) x.push_back(static_cast<float>(i % 7) - 10.0f);
  CHECK(cpu::max_f32(x.data(), static_cast<std::int64_t>(x.size())) == 3.0f);
  CHECK(cpu::max_f32(x.data(), 0) == -std::numeric_limits<float>::infinity());
  // exp of -inf entries (masked scores) adds nothing.
  const std::vector<float> masked = {0.0f, -std::numeric_limits<float>::infinity(), 0.0f};
  CHECK(cpu::sum_exp_f32(masked.data(), 3, 0.0f) == 2.0f);
}

}  // namespace dragoman
