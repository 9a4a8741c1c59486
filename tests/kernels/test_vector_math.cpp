// The f32 row kernels (kernels/cpu/vector_math.h): exp_approx within 1 ulp of std::exp over its
// range and exact at its edges; every instruction-set level this CPU can run (AVX-512, AVX2, the
// baseline) against plain double-precision loops, on lengths around the vector widths, and against
// the scalar spec of the 16-lane order bit for bit, so that all levels give the same bits; and the
// dispatch: the level picked is the best the CPU's features allow, DRAGOMAN_CPU_ISA lowers it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <fstream>
#include <sstream>
#include <string>

#include "device/cpu/cpu_isa.h"
#include "kernels/common/adam.h"
#include "kernels/cpu/vector_math.h"
#include "ops/build_info.h"

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

// The kernels of every level this CPU can run.
std::vector<const cpu::VectorKernels*> levels() {
  std::vector<const cpu::VectorKernels*> tables;
  for (const cpu::CpuIsa isa : {cpu::CpuIsa::baseline, cpu::CpuIsa::avx2, cpu::CpuIsa::avx512}) {
    if (cpu::cpu_supports(isa)) tables.push_back(&cpu::vector_kernels(isa));
  }
  return tables;
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
  for (const cpu::VectorKernels* k : levels()) {
    for (const std::int64_t n : kLengths) {
      INFO(cpu::cpu_isa_name(k->isa) << ", n = " << n);
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
      CHECK(k->max_f32(x.data(), n) == static_cast<float>(max_ref));
      // Each exp within 1 ulp plus the shift's rounding, and the sum's rounding: n eps relative at most.
      CHECK(k->sum_exp_f32(x.data(), n, shift) == Approx(sum_ref).epsilon(4 * eps * (1 + std::sqrt(n))).margin(1e-30));
      std::vector<float> out(x.size());
      const float stored_sum = k->exp_store_f32(x.data(), n, shift, out.data());
      CHECK(stored_sum == k->sum_exp_f32(x.data(), n, shift));
      for (std::int64_t i = 0; i < n; ++i) CHECK(out[i] == cpu::exp_approx(x[i] - shift));
      CHECK(k->dot_f32(x.data(), y.data(), n) == Approx(dot_ref).margin(2 * eps * abs_dot + 1e-30));
      // Attention's loops: rows x, y and x again (stride n) weighted 0.5, 0 (skipped) and 0.25, added to
      // y in order of the rows, each product rounded: the same bits as the plain loop.
      std::vector<float> rows = x;
      rows.insert(rows.end(), y.begin(), y.end());
      rows.insert(rows.end(), x.begin(), x.end());
      const float weights[3] = {0.5f, 0.0f, 0.25f};
      std::vector<float> acc = y;
      k->add_weighted_rows_f32(weights, rows.data(), n, 3, n, acc.data());
      for (std::int64_t i = 0; i < n; ++i) {
        float expected = y[i];
        expected += 0.5f * x[i];
        expected += 0.25f * x[i];
        CHECK(acc[i] == expected);
      }
      // Query y against the keys x, y, x (each of size n): scaled dots and their maximum.
      float dots[3];
      const float largest = k->scaled_dots_f32(y.data(), rows.data(), n, 3, n, 0.5f, dots);
      double yy = 0;  // its terms are all positive: their sum is their magnitude
      for (std::int64_t i = 0; i < n; ++i) yy += static_cast<double>(y[i]) * y[i];
      CHECK(dots[0] == Approx(0.5 * dot_ref).margin(eps * abs_dot + 1e-30));
      CHECK(dots[1] == Approx(0.5 * yy).margin(eps * yy + 1e-30));
      CHECK(dots[2] == dots[0]);
      CHECK(largest == std::max(dots[0], dots[1]));
      std::vector<float> shifted = x;
      k->subtract_f32(shifted.data(), n, 1.25f);
      for (std::int64_t i = 0; i < n; ++i) CHECK(shifted[i] == x[i] - 1.25f);
      std::vector<float> swished(x.size());
      k->swish_f32(x.data(), n, swished.data());
      for (std::int64_t i = 0; i < n; ++i) {
        CHECK(swished[i] == cpu::swish_approx(x[i]));
        const double exact = x[i] / (1.0 + std::exp(-static_cast<double>(x[i])));
        CHECK(swished[i] == Approx(exact).epsilon(4 * eps).margin(1e-30));
      }
    }
  }
}

TEST_CASE("vector_math: attention's loops over many rows (four at a time, then one by one)", "[kernels]") {
  const double eps = std::numeric_limits<float>::epsilon();
  for (const cpu::VectorKernels* k : levels()) {
    for (const std::int64_t n : kLengths) {
      INFO(cpu::cpu_isa_name(k->isa) << ", n = " << n);
      const std::int64_t count = 11, stride = n + 3;  // two runs of four rows, three left; padded rows
      const std::vector<float> rows = random_row(count * stride, 7 + static_cast<std::uint32_t>(n), 2.0f);
      const std::vector<float> q = random_row(n, 8 + static_cast<std::uint32_t>(n), 1.0f);
      std::vector<float> weights = random_row(count, 9, 1.0f);
      for (const bool with_zero : {false, true}) {
        if (with_zero) weights[5] = 0.0f;  // a zero weight in the second run: that row is skipped
        std::vector<float> acc = q, expected = q;
        k->add_weighted_rows_f32(weights.data(), rows.data(), stride, count, n, acc.data());
        for (std::int64_t s = 0; s < count; ++s) {
          if (weights[s] == 0.0f) continue;
          for (std::int64_t i = 0; i < n; ++i) expected[i] += weights[s] * rows[s * stride + i];
        }
        CHECK(acc == expected);  // in order of the rows, each product rounded: the plain loop's bits
      }
      std::vector<float> dots(static_cast<std::size_t>(count));
      const float largest = k->scaled_dots_f32(q.data(), rows.data(), stride, count, n, 0.125f, dots.data());
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
}

TEST_CASE("vector_math: dequantize_row_f32 equals the plain loop bit for bit", "[kernels]") {
  for (const cpu::VectorKernels* k : levels()) {
    for (const std::int64_t n : kLengths) {
      INFO(cpu::cpu_isa_name(k->isa) << ", n = " << n);
      std::vector<std::int32_t> products(static_cast<std::size_t>(n));
      for (std::int64_t j = 0; j < n; ++j) products[j] = static_cast<std::int32_t>((j * 7919) % 40001) - 20000;
      const std::vector<float> sw = random_row(n, 11, 0.01f), bias = random_row(n, 12, 3.0f);
      for (const bool with_bias : {false, true}) {
        for (const bool relu : {false, true}) {
          std::vector<float> y(static_cast<std::size_t>(n));
          k->dequantize_row_f32(products.data(), 0.003f, sw.data(), n, with_bias ? bias.data() : nullptr, relu,
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
}

TEST_CASE("vector_math: int8 row quantization equals std::nearbyint, ties to even, clamped", "[kernels]") {
  for (const cpu::VectorKernels* k : levels()) {
    for (const std::int64_t n : kLengths) {
      INFO(cpu::cpu_isa_name(k->isa) << ", n = " << n);
      std::vector<float> x = random_row(n, 7 + static_cast<std::uint32_t>(n), 2.0f);
      // Exact ties (k + 1/2 steps of 0.5) and the ends of the range.
      for (std::int64_t i = 0; i < n; i += 3) x[i] = 0.25f * static_cast<float>(i % 11 - 5) + 0.125f;
      double largest = 0;
      for (const float v : x) largest = std::max(largest, static_cast<double>(std::abs(v)));
      CHECK(k->max_abs_f32(x.data(), n) == static_cast<float>(largest));
      for (const float limit : {127.0f, 63.0f}) {  // 8-bit and 7-bit (quantize.h)
        for (const float scale : {static_cast<float>(largest) / limit, 0.25f, 0.01f}) {
          if (!(scale > 0)) continue;
          std::vector<std::int8_t> q(x.size());
          k->quantize_row_f32(x.data(), n, scale, limit, q.data());
          for (std::int64_t i = 0; i < n; ++i) {
            const float expected = std::min(limit, std::max(-limit, std::nearbyint(x[i] / scale)));
            CHECK(static_cast<int>(q[i]) == static_cast<int>(expected));
          }
        }
      }
    }
  }
}

TEST_CASE("vector_math: max_f32 ignores NaN entries, -inf for an empty row", "[kernels]") {
  for (const cpu::VectorKernels* k : levels()) {
    INFO(cpu::cpu_isa_name(k->isa));
    std::vector<float> x = {1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f, -2.0f};
    for (int i = 0; i < 40; ++i) x.push_back(static_cast<float>(i % 7) - 10.0f);
    CHECK(k->max_f32(x.data(), static_cast<std::int64_t>(x.size())) == 3.0f);
    CHECK(k->max_f32(x.data(), 0) == -std::numeric_limits<float>::infinity());
    // exp of -inf entries (masked scores) adds nothing.
    const std::vector<float> masked = {0.0f, -std::numeric_limits<float>::infinity(), 0.0f};
    CHECK(k->sum_exp_f32(masked.data(), 3, 0.0f) == 2.0f);
  }
}

TEST_CASE("vector_math: first_above_f32 finds the first entry above a threshold, never a NaN", "[kernels]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const cpu::VectorKernels* k : levels()) {
    INFO(cpu::cpu_isa_name(k->isa));
    for (const std::int64_t n : kLengths) {
      std::vector<float> x = random_row(n, 7, 1.0f);
      for (std::int64_t i = 0; i < n; i += 5) x[static_cast<std::size_t>(i)] = nan;
      for (const float threshold : {-10.0f, 0.5f, 2.0f, 2.5f, 100.0f}) {
        std::int64_t expected = n;
        for (std::int64_t i = 0; i < n && expected == n; ++i) {
          if (x[static_cast<std::size_t>(i)] > threshold) expected = i;
        }
        INFO("n " << n << ", threshold " << threshold);
        CHECK(k->first_above_f32(x.data(), n, threshold) == expected);
      }
      // One entry above, at each position: found there, whatever register and lane it falls in.
      for (std::int64_t at = 0; at < n; at += (n > 100 ? 97 : 1)) {
        std::vector<float> row(static_cast<std::size_t>(n), 1.0f);
        row[static_cast<std::size_t>(at)] = 1.5f;
        CHECK(k->first_above_f32(row.data(), n, 1.0f) == at);
      }
    }
  }
}

namespace {

// The same bits, or both NaN (which NaN an operation returns depends on its operands' order, and a
// compiler may swap the operands of an addition).
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b); }

// Two arrays of the same bytes (empty ones too: memcmp may not be given the null data() of an
// empty vector).
template <typename T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The spec of the sums (vector_math.h): 16 lanes, lane l adding the terms i % 16 == l in order of i
// from +0, then the fixed tree (l + 8, + 4, + 2, + 1). `combine` is + for sums, the NaN-ignoring
// max for maxima (from `start`).
template <typename Term, typename Combine>
float lanes_spec(std::int64_t n, float start, Term term, Combine combine) {
  float lanes[cpu::kVectorLanes];
  for (float& l : lanes) l = start;
  for (std::int64_t i = 0; i < n; ++i) lanes[i % cpu::kVectorLanes] = combine(lanes[i % cpu::kVectorLanes], term(i));
  for (int half = cpu::kVectorLanes / 2; half >= 1; half /= 2) {
    for (int j = 0; j < half; ++j) lanes[j] = combine(lanes[j], lanes[j + half]);
  }
  return lanes[0];
}

float add(float a, float b) { return a + b; }
float larger(float a, float b) { return b > a ? b : a; }

// A row with the values that catch a lane mix-up or a contracted multiply-add: wide magnitudes,
// exact cancellations, and (with `special`) -inf, +inf and NaN entries.
std::vector<float> awkward_row(std::int64_t n, std::uint32_t seed, bool special) {
  std::vector<float> x = random_row(n, seed, 4.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    if (i % 5 == 1) x[i] *= 1e4f;
    if (i % 7 == 3) x[i] = -x[i - 1];
    if (special && i % 11 == 4) x[i] = -std::numeric_limits<float>::infinity();
  }
  if (special && n > 9) {
    x[9] = std::numeric_limits<float>::quiet_NaN();
    x[n - 1] = std::numeric_limits<float>::infinity();
  }
  return x;
}

}  // namespace

TEST_CASE("vector_math: every level gives the 16-lane spec's bits (sums, maxima, exp, dots)", "[kernels]") {
  const std::int64_t lengths[] = {0, 1, 4, 5, 8, 9, 15, 16, 17, 24, 31, 32, 33, 47, 64, 100, 1000, 37000};
  for (const cpu::VectorKernels* k : levels()) {
    for (const std::int64_t n : lengths) {
      for (const bool special : {false, true}) {
        INFO(cpu::cpu_isa_name(k->isa) << ", n = " << n << (special ? ", with inf and NaN" : ""));
        const std::vector<float> x = awkward_row(n, 31 + static_cast<std::uint32_t>(n), special);
        const std::vector<float> y = awkward_row(n, 77 + static_cast<std::uint32_t>(n), false);
        const float ninf = -std::numeric_limits<float>::infinity();
        CHECK(same_bits(k->max_f32(x.data(), n), lanes_spec(
                                                     n, ninf, [&](std::int64_t i) { return x[i]; }, larger)));
        CHECK(same_bits(k->max_abs_f32(x.data(), n),
                        lanes_spec(
                            n, 0.0f, [&](std::int64_t i) { return x[i] < 0.0f ? -x[i] : x[i]; }, larger)));
        const float shift = special ? 3.5f : k->max_f32(x.data(), n);
        const float sum = lanes_spec(
            n, 0.0f, [&](std::int64_t i) { return cpu::exp_approx(x[i] - shift); }, add);
        CHECK(same_bits(k->sum_exp_f32(x.data(), n, shift), sum));
        std::vector<float> out(x.size());
        CHECK(same_bits(k->exp_store_f32(x.data(), n, shift, out.data()), sum));
        bool each_exp = true;
        for (std::int64_t i = 0; i < n; ++i) each_exp = each_exp && same_bits(out[i], cpu::exp_approx(x[i] - shift));
        CHECK(each_exp);
        const float dot = lanes_spec(
            n, 0.0f, [&](std::int64_t i) { return x[i] * y[i]; }, add);
        CHECK(same_bits(k->dot_f32(x.data(), y.data(), n), dot));
        // Keys x, y, x, y, x (stride n): groups of four and one alone give each key dot_f32 * scale.
        std::vector<float> keys;
        for (int s = 0; s < 5; ++s) keys.insert(keys.end(), (s % 2 == 0 ? x : y).begin(), (s % 2 == 0 ? x : y).end());
        float dots[5];
        k->scaled_dots_f32(y.data(), keys.data(), n, 5, n, 0.125f, dots);
        const float yy = lanes_spec(
            n, 0.0f, [&](std::int64_t i) { return y[i] * y[i]; }, add);
        for (int s = 0; s < 5; ++s) CHECK(same_bits(dots[s], (s % 2 == 0 ? dot : yy) * 0.125f));
      }
    }
  }
}

TEST_CASE("vector_math: the levels agree bit for bit on the element-wise kernels", "[kernels]") {
  const std::vector<const cpu::VectorKernels*> tables = levels();
  const cpu::VectorKernels& base = *tables.front();
  REQUIRE(base.isa == cpu::CpuIsa::baseline);
  for (const std::int64_t n : kLengths) {
    const std::vector<float> x = awkward_row(n, 5 + static_cast<std::uint32_t>(n), true);
    const std::vector<float> rows = random_row(6 * (n + 1), 6, 1.0f), weights = random_row(6, 7, 1.0f);
    std::vector<std::int32_t> products(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) products[j] = static_cast<std::int32_t>(j * 104729 % 2000001) - 1000000;
    for (const cpu::VectorKernels* k : tables) {
      INFO(cpu::cpu_isa_name(k->isa) << ", n = " << n);
      std::vector<float> a = x, b = x;
      k->subtract_f32(a.data(), n, 0.75f);
      base.subtract_f32(b.data(), n, 0.75f);
      CHECK(same_bytes(a, b));
      k->swish_f32(x.data(), n, a.data());
      base.swish_f32(x.data(), n, b.data());
      CHECK(same_bytes(a, b));
      a = random_row(n, 8, 1.0f);
      b = a;
      k->add_weighted_rows_f32(weights.data(), rows.data(), n + 1, 6, n, a.data());
      base.add_weighted_rows_f32(weights.data(), rows.data(), n + 1, 6, n, b.data());
      CHECK(a == b);
      std::vector<float> bias(rows.begin(), rows.begin() + n);
      k->dequantize_row_f32(products.data(), 1e-3f, rows.data() + n, n, bias.data(), true, a.data());
      base.dequantize_row_f32(products.data(), 1e-3f, rows.data() + n, n, bias.data(), true, b.data());
      CHECK(a == b);
      const std::vector<float> finite = random_row(n, 9, 3.0f);
      std::vector<std::int8_t> qa(x.size()), qb(x.size());
      k->quantize_row_f32(finite.data(), n, 0.02f, 63.0f, qa.data());
      base.quantize_row_f32(finite.data(), n, 0.02f, 63.0f, qb.data());
      CHECK(qa == qb);
    }
  }
}

TEST_CASE("vector_math: adam_f32 at every level gives common::adam_update's bits", "[kernels]") {
  // Steps 1 and 1000 (bias corrections far from and near 1), with and without weight decay;
  // gradients spanning many magnitudes (tiny ones make m / sqrt(v) about +-1), moments from a
  // previous step, and zeros.
  for (const std::int64_t step : {std::int64_t{1}, std::int64_t{1000}}) {
    for (const double decay : {0.0, 0.01}) {
      const common::AdamScalars<float> s = common::adam_scalars<float>(1e-3, 0.9, 0.98, 1e-9, decay, step);
      for (const std::int64_t n : kLengths) {
        std::vector<float> param = random_row(n, 10, 1.0f), grad = random_row(n, 11, 1.0f),
                           m = random_row(n, 12, 0.01f), v = random_row(n, 13, 1e-4f);
        for (std::int64_t i = 0; i < n; ++i) {
          grad[i] *= std::pow(10.0f, static_cast<float>(i % 13) - 9.0f);
          v[i] = std::fabs(v[i]);
          if (i % 17 == 3) grad[i] = m[i] = v[i] = 0.0f;
        }
        std::vector<float> want_p = param, want_m = m, want_v = v;
        for (std::int64_t i = 0; i < n; ++i)
          want_p[i] = common::adam_update(want_p[i], grad[i], want_m[i], want_v[i], s);
        for (const cpu::VectorKernels* k : levels()) {
          INFO(cpu::cpu_isa_name(k->isa) << ", n = " << n << ", step " << step << ", decay " << decay);
          std::vector<float> p = param, mm = m, vv = v;
          k->adam_f32(p.data(), grad.data(), mm.data(), vv.data(), n, s);
          CHECK(same_bytes(p, want_p));
          CHECK(same_bytes(mm, want_m));
          CHECK(same_bytes(vv, want_v));
        }
      }
    }
  }
}

TEST_CASE("build_info: an OpenBLAS that does not know the CPU is told which kernels to take", "[kernels]") {
  CHECK(ops::openblas_core_hint("Prescott", false, true, false) ==
        ": it does not know this CPU; OPENBLAS_CORETYPE=Haswell gives it faster ones");
  CHECK(ops::openblas_core_hint("Prescott", false, true, true).find("OPENBLAS_CORETYPE=SkylakeX") != std::string::npos);
  CHECK(ops::openblas_core_hint("Nehalem", false, true, false).find("Haswell") != std::string::npos);
  CHECK(ops::openblas_core_hint("Prescott", true, true, true).empty());     // the user chose it
  CHECK(ops::openblas_core_hint("Prescott", false, false, false).empty());  // an SSE-only CPU: right as it is
  CHECK(ops::openblas_core_hint("Haswell", false, true, true).empty());
  CHECK(ops::openblas_core_hint("Cooperlake", false, true, true).empty());
}

TEST_CASE("cpu_isa: the level picked is the best the CPU's features allow, DRAGOMAN_CPU_ISA lowers it", "[kernels]") {
  // The CPU's features as the kernel reports them (/proc/cpuinfo's flags, which also drop what the
  // OS does not save), independent of the dispatcher's own CPUID reading.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  }
#if defined(__x86_64__)
  if (flags.empty()) {
    WARN("no flags line in /proc/cpuinfo: the features cannot be read independently here");
  } else {
    const auto has = [&](const char* f) { return flags.find(std::string(" ") + f + " ") != std::string::npos; };
    cpu::CpuIsa expected = cpu::CpuIsa::baseline;
    if (has("avx2") && has("fma")) expected = cpu::CpuIsa::avx2;
    if (expected == cpu::CpuIsa::avx2 && has("avx512f") && has("avx512bw") && has("avx512dq") && has("avx512vl")) {
      expected = cpu::CpuIsa::avx512;
    }
    INFO("flags:" << flags);
    CHECK(cpu::cpu_isa_name(cpu::best_cpu_isa()) == std::string(cpu::cpu_isa_name(expected)));
  }
#else
  CHECK(cpu::best_cpu_isa() == cpu::CpuIsa::baseline);
#endif
  // The kernels running: the best, or the level DRAGOMAN_CPU_ISA names (CI runs the suite again with it).
  const char* forced = std::getenv("DRAGOMAN_CPU_ISA");
  CHECK(cpu::active_cpu_isa() == cpu::resolve_cpu_isa(forced));
  if (forced == nullptr || *forced == '\0') CHECK(cpu::active_cpu_isa() == cpu::best_cpu_isa());
  const std::vector<float> row = random_row(100, 3, 2.0f);
  CHECK(same_bits(cpu::sum_exp_f32(row.data(), 100, 1.0f),
                  cpu::vector_kernels(cpu::active_cpu_isa()).sum_exp_f32(row.data(), 100, 1.0f)));
  // The names, and levels above the CPU's refused.
  CHECK(cpu::resolve_cpu_isa("BASELINE") == cpu::CpuIsa::baseline);
  CHECK(cpu::resolve_cpu_isa("") == cpu::best_cpu_isa());
  CHECK(cpu::resolve_cpu_isa(nullptr) == cpu::best_cpu_isa());
  CHECK_THROWS_WITH(cpu::resolve_cpu_isa("sse4"),
                    Catch::Contains("DRAGOMAN_CPU_ISA=sse4: expected avx512, avx2 or baseline"));
  for (const cpu::CpuIsa isa : {cpu::CpuIsa::avx2, cpu::CpuIsa::avx512}) {
    if (cpu::cpu_supports(isa)) {
      CHECK(cpu::resolve_cpu_isa(cpu::cpu_isa_name(isa)) == isa);
    } else {
      CHECK_THROWS_WITH(cpu::resolve_cpu_isa(cpu::cpu_isa_name(isa)), Catch::Contains("this CPU cannot run it"));
      CHECK_THROWS(cpu::vector_kernels(isa));
    }
  }
}

TEST_CASE("vector_math: the training step's attention loops (keys transposed, rank-1 updates)", "[kernels]") {
  // Key sizes around the 16 lanes, key counts around every register width: scaled_dots_transposed_f32
  // is scaled_dots_f32 bit for bit (so attention.cpp may take either), at every level.
  for (const cpu::VectorKernels* k : levels()) {
    for (const std::int64_t K : {1, 5, 16, 17, 32, 48, 64}) {
      for (const std::int64_t n : {0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 100}) {
        INFO(cpu::cpu_isa_name(k->isa) << ", K = " << K << ", n = " << n);
        const std::int64_t stride = K + 2;
        std::vector<float> keys =
            random_row(std::max<std::int64_t>(n, 1) * stride, 21 + static_cast<std::uint32_t>(K), 1.5f);
        if (n > 2) keys[2 * stride] = -0.0f;  // a signed zero, and a key of zeros only
        if (n > 3) std::fill(keys.begin() + 3 * stride, keys.begin() + 4 * stride, 0.0f);
        const std::vector<float> q = random_row(K, 22 + static_cast<std::uint32_t>(n), 1.0f);
        const std::int64_t ld = (n + 15) / 16 * 16;
        std::vector<float> kt(static_cast<std::size_t>(K * std::max<std::int64_t>(ld, 1)),
                              7.0f);  // padding: any values
        for (std::int64_t s = 0; s < n; ++s) {
          for (std::int64_t i = 0; i < K; ++i) kt[i * ld + s] = keys[s * stride + i];
        }
        std::vector<float> expected(static_cast<std::size_t>(n) + 1, 5.0f), got = expected;
        const float largest = k->scaled_dots_f32(q.data(), keys.data(), stride, n, K, 0.176f, expected.data());
        const float largest_t = k->scaled_dots_transposed_f32(q.data(), kt.data(), ld, n, K, 0.176f, got.data());
        CHECK(same_bytes(expected, got));  // got[n] untouched
        CHECK(same_bits(largest, largest_t));

        // rows[s] += a[s] * x and out += sum over s of a[s] * rows[s] with a zero weight kept:
        // the plain loops' bits.
        std::vector<float> a = random_row(n, 23, 1.0f);
        if (n > 1) a[1] = 0.0f;
        std::vector<float> rows = keys, rows_expected = keys;
        k->add_outer_f32(a.data(), q.data(), n, K, rows.data(), stride);
        for (std::int64_t s = 0; s < n; ++s) {
          for (std::int64_t i = 0; i < K; ++i) rows_expected[s * stride + i] += a[s] * q[i];
        }
        CHECK(rows == rows_expected);
        if (n > 1) keys[1 * stride] = std::numeric_limits<float>::infinity();  // 0 * inf: NaN, not skipped
        std::vector<float> out = q, out_expected = q;
        k->add_rows_f32(a.data(), keys.data(), stride, n, K, out.data());
        for (std::int64_t s = 0; s < n; ++s) {
          for (std::int64_t i = 0; i < K; ++i) out_expected[i] += a[s] * keys[s * stride + i];
        }
        CHECK(same_bytes(out, out_expected));
        if (n > 1) CHECK(std::isnan(out[0]));
      }
    }
  }
}

// The spec of the double-lane sums: term(i) added to lane i % 16 in order, then the lanes' tree.
template <typename Term>
double double_lanes_spec(std::int64_t n, Term term) {
  double lanes[cpu::kVectorLanes] = {};
  for (std::int64_t i = 0; i < n; ++i) lanes[i % cpu::kVectorLanes] += term(i);
  for (int half = cpu::kVectorLanes / 2; half >= 1; half /= 2) {
    for (int j = 0; j < half; ++j) lanes[j] = lanes[j] + lanes[j + half];
  }
  return lanes[0];
}

bool same_double(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b); }

TEST_CASE("vector_math: sum_wide_f32 and sum_squares_f32 add in 16 double lanes at every level", "[kernels]") {
  for (const cpu::VectorKernels* k : levels()) {
    for (const std::int64_t n : kLengths) {
      for (const bool special : {false, true}) {
        INFO(cpu::cpu_isa_name(k->isa) << ", n = " << n << (special ? ", with inf and NaN" : ""));
        const std::vector<float> x = awkward_row(n, 91 + static_cast<std::uint32_t>(n), special);
        const auto wide = [&](std::int64_t i) { return static_cast<double>(x[i]); };
        double reference = 0;
        for (std::int64_t i = 0; i < n; ++i) reference += wide(i);
        CHECK(same_double(k->sum_squares_f32(x.data(), n),
                          double_lanes_spec(n, [&](std::int64_t i) { return wide(i) * wide(i); })));
        const double got = k->sum_wide_f32(x.data(), n);
        CHECK(same_double(got, double_lanes_spec(n, wide)));
        if (!special) CHECK(got == Approx(reference).epsilon(1e-6).margin(1e-6 * (1 + std::sqrt(n))));
      }
    }
  }
}

TEST_CASE("vector_math: layer norm's row sums in 16 lanes, the same bits at every level", "[kernels]") {
  for (const cpu::VectorKernels* k : levels()) {
    for (const std::int64_t n : kLengths) {
      for (const bool special : {false, true}) {
        INFO(cpu::cpu_isa_name(k->isa) << ", n = " << n << (special ? ", with inf and NaN" : ""));
        const std::vector<float> x = awkward_row(n, 61 + static_cast<std::uint32_t>(n), special);
        const std::vector<float> dy = random_row(n, 62, 1.0f), w = random_row(n, 63, 1.0f);
        const float mean = 0.375f, rstd = 1.25f;
        CHECK(same_bits(k->sum_f32(x.data(), n), lanes_spec(
                                                     n, 0.0f, [&](std::int64_t i) { return x[i]; }, add)));
        CHECK(same_bits(k->sum_squared_deviations_f32(x.data(), n, mean),
                        lanes_spec(
                            n, 0.0f, [&](std::int64_t i) { return (x[i] - mean) * (x[i] - mean); }, add)));
        float sums[2];
        k->layer_norm_sums_f32(dy.data(), w.data(), x.data(), n, mean, rstd, sums);
        CHECK(same_bits(sums[0], lanes_spec(
                                     n, 0.0f, [&](std::int64_t i) { return dy[i] * w[i]; }, add)));
        CHECK(same_bits(sums[1],
                        lanes_spec(
                            n, 0.0f, [&](std::int64_t i) { return dy[i] * w[i] * ((x[i] - mean) * rstd); }, add)));
      }
    }
  }
}

}  // namespace dragoman
