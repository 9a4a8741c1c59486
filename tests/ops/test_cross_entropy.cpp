// Log-softmax and the label-smoothed cross-entropy: the raw-pointer kernels against the formula of
// docs/MODEL.md, and ops::cross_entropy_fused_'s gradient against float64 central finite differences;
// for every OpCase at awkward and vocabulary-sized rows, the log-probabilities and dlogits rounded
// once from a double reference of the rounded logits (and the gradient scaled in the kernel), sentinels
// after the rows, the same sums from both kernels (the CPU's tests); for every op case (each device
// and dtype of the test binary), the device forms' sums added into a tensor on the logits' device.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/tensor.h"
#include "kernels/cross_entropy.h"
#include "kernels/elementwise.h"
#include "ops/cross_entropy.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;
using namespace test;  // the shared helpers of tests/ops/op_testing.h

// ---- log-softmax and cross-entropy --------------------------------------------------------------

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::log_softmax rows are log-probabilities", "[kernels]", float, double) {
  using T = TestType;
  const int64_t rows = 4, v = 9;
  const std::vector<T> x0 = random_values<T>(rows * v, 50, 5.0, 40.0);  // large logits: needs the max shift
  std::vector<T> x = x0;
  cpu::log_softmax<T>(x.data(), rows, v);
  for (int64_t r = 0; r < rows; ++r) {
    double max_value = -std::numeric_limits<double>::infinity(), z = 0, sum_p = 0;
    for (int64_t k = 0; k < v; ++k) max_value = std::max(max_value, static_cast<double>(x0[at(r * v + k)]));
    for (int64_t k = 0; k < v; ++k) z += std::exp(x0[at(r * v + k)] - max_value);
    for (int64_t k = 0; k < v; ++k) {
      CHECK(x[at(r * v + k)] == Approx(x0[at(r * v + k)] - max_value - std::log(z)).margin(4 * tolerance<T>()));
      sum_p += std::exp(static_cast<double>(x[at(r * v + k)]));
    }
    CHECK(sum_p == Approx(1.0).margin(4 * tolerance<T>()));
  }
}

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::cross_entropy_forward and cross_entropy_fused match the formula of docs/MODEL.md",
                                "[kernels]", float, double) {
  using T = TestType;
  const int64_t rows = 5, v = 7;
  const double eps = 0.1;
  for (const std::int32_t pad : {0, 2}) {
    INFO("pad " << pad);
    // Row 1 has the pad target and is ignored; row 3's target is another row's.
    const std::vector<std::int32_t> targets = {3, pad, 6, 3, pad == 0 ? 1 : 0};
    const std::vector<T> logits = random_values<T>(rows * v, 60, 3.0);
    std::vector<T> lp = logits, grad = logits;
    double loss_sum = 1.0, nll_sum = 2.0;  // the kernels add to these
    cpu::cross_entropy_forward<T>(lp.data(), targets.data(), rows, v, pad, eps, &loss_sum, &nll_sum);
    double fused_loss = 1.0, fused_nll = 2.0;
    cpu::cross_entropy_fused<T>(grad.data(), targets.data(), rows, v, pad, eps, &fused_loss, &fused_nll);
    CHECK(fused_loss == loss_sum);  // the same sums, bit for bit
    CHECK(fused_nll == nll_sum);

    double expected_loss = 1.0, expected_nll = 2.0;
    std::vector<double> expected_grad(at(rows * v), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      double z = 0;
      for (int64_t k = 0; k < v; ++k) z += std::exp(static_cast<double>(logits[at(r * v + k)]));
      std::vector<double> logp(at(v));
      for (int64_t k = 0; k < v; ++k) {
        logp[at(k)] = logits[at(r * v + k)] - std::log(z);
        CHECK(lp[at(r * v + k)] == Approx(logp[at(k)]).margin(4 * tolerance<T>()));  // every row, pad ones too
      }
      const std::int32_t y = targets[at(r)];
      if (y == pad) continue;
      // q(k) = (1 - eps) [k = y] + eps / (V - 1) [k != pad]: sums to 1, nothing on pad.
      double q_sum = 0;
      for (int64_t k = 0; k < v; ++k) {
        const double q = (k == y ? 1.0 - eps : 0.0) + (k != pad ? eps / (v - 1) : 0.0);
        q_sum += q;
        expected_loss -= q * logp[at(k)];
        expected_grad[at(r * v + k)] = std::exp(logp[at(k)]) - q;
      }
      CHECK(q_sum == Approx(1.0).margin(1e-15));
      expected_nll -= logp[at(y)];
    }
    CHECK(loss_sum == Approx(expected_loss).margin(8 * tolerance<T>()));
    CHECK(nll_sum == Approx(expected_nll).margin(8 * tolerance<T>()));

    for (std::size_t i = 0; i < grad.size(); ++i) {
      CHECK(grad[i] == Approx(expected_grad[i]).margin(4 * tolerance<T>()));
    }
    for (int64_t k = 0; k < v; ++k) CHECK(grad[at(1 * v + k)] == T(0));  // the pad row
  }
}

DRAGOMAN_CPU_TEST_CASE("ops::cross_entropy_fused_ gives cross_entropy_'s sums and their gradient (finite differences)",
                       "[ops]") {
  const std::int32_t pad = 0;
  Tensor logits = random64({5, 7}, 60, 2.0);                  // perturbed by check_gradient
  const Tensor targets = ids_tensor({3, pad, 6, 3, 1}, {5});  // row 1 is padding
  for (const double smoothing : {0.1, 0.0}) {
    INFO("smoothing " << smoothing);
    const auto loss = [&] {
      Tensor l = logits.clone();
      return ops::cross_entropy_(l, targets, pad, smoothing).loss;
    };
    Tensor log_probs = logits.clone(), grad = logits.clone();
    const ops::CrossEntropySums sums = ops::cross_entropy_(log_probs, targets, pad, smoothing);
    const ops::CrossEntropySums fused = ops::cross_entropy_fused_(grad, targets, pad, smoothing);
    CHECK(fused.loss == sums.loss);
    CHECK(fused.nll == sums.nll);
    if (smoothing == 0) CHECK(sums.loss == Approx(sums.nll).margin(1e-14));
    check_gradient("logits", loss, logits, grad);
    const std::vector<double> gv = grad.to_vector<double>();
    for (std::size_t k = 7; k < 14; ++k) CHECK(gv[k] == 0.0);  // the pad row
  }
}

TEST_CASE("ops cross-entropy's device forms add their sums into a tensor, never reading them back", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const std::int32_t pad = 0;
      const Tensor logits = test::from_doubles(test::random_doubles(5 * 7, 61, 2.0), {5, 7}, c.dtype, c.device);
      const Tensor targets = ids_tensor({3, pad, 6, 3, 1}, {5}).to(c.device);  // on the logits' device
      for (const bool fused : {false, true}) {
        INFO((fused ? "fused" : "evaluation"));
        Tensor once = logits.clone();
        const ops::CrossEntropySums expected =
            fused ? ops::cross_entropy_fused_(once, targets, pad, 0.1) : ops::cross_entropy_(once, targets, pad, 0.1);
        // Two calls add into one accumulator (f64 [2] on the logits' device) that already holds something.
        Tensor sums = Tensor::from_vector(std::vector<double>{1.0, 2.0}, {2}).to(c.device);
        for (int call = 0; call < 2; ++call) {
          Tensor l = logits.clone();
          if (fused) {
            ops::cross_entropy_fused_(l, targets, pad, 0.1, sums);
          } else {
            ops::cross_entropy_(l, targets, pad, 0.1, sums);
          }
          CHECK(test::to_doubles(l) == test::to_doubles(once));  // the same kernel: the same bits
        }
        const std::vector<double> got = sums.to(Device::cpu()).to_vector<double>();
        CHECK(got[0] == Approx(1.0 + 2 * expected.loss).epsilon(1e-14));
        CHECK(got[1] == Approx(2.0 + 2 * expected.nll).epsilon(1e-14));
        Tensor l = logits.clone();
        Tensor wrong = Tensor::zeros({2}, DType::kF32, c.device);
        CHECK_THROWS_WITH(ops::cross_entropy_(l, targets, pad, 0.1, wrong), Catch::Contains("f64 [2]"));
      }
    }
  }
}

namespace {

// log_softmax, cross_entropy_forward and cross_entropy_fused of `rows` rows of v classes over T.
template <typename T>
void check_cross_entropy_rounding(DType dtype, int64_t v) {
  INFO("V " << v);
  const int64_t rows = 3;
  const std::int32_t pad = 0;
  const double eps = 0.1, off = v > 1 ? eps / static_cast<double>(v - 1) : 0.0;
  const std::vector<double> x = test::rounded_to(test::random_doubles(rows * v, 7, 4.0), dtype);
  const std::vector<std::int32_t> targets = {static_cast<std::int32_t>(v - 1), pad, static_cast<std::int32_t>(v / 2)};
  // The double reference: log-probabilities, p - q, and the sums over the non-pad rows.
  std::vector<double> lp(x.size()), grad(x.size()), lp_magnitude(x.size()), grad_magnitude(x.size());
  double loss = 0, nll = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * v;
    const double max_value = *std::max_element(row, row + v);
    double z = 0;
    for (int64_t k = 0; k < v; ++k) z += std::exp(row[k] - max_value);
    const double log_z = max_value + std::log(z);
    const std::int32_t y = targets[at(r)];
    for (int64_t k = 0; k < v; ++k) {
      const std::size_t i = at(r * v + k);
      lp[i] = row[k] - log_z;
      const double q = (k == y ? 1.0 - eps : 0.0) + (k != pad ? off : 0.0);
      grad[i] = y == pad ? 0.0 : std::exp(lp[i]) - q;
      lp_magnitude[i] = 1.0 + std::fabs(lp[i]);
      grad_magnitude[i] = y == pad ? 0.0 : std::exp(lp[i]) * lp_magnitude[i] + std::fabs(grad[i]);
      if (y != pad) loss -= (k == y ? 1.0 - eps : 0.0) * lp[i] + (k != pad ? off * lp[i] : 0.0);
    }
    if (y != pad) nll -= lp[at(r * v + y)];
  }
  // acc_t<T>'s error on a log-probability: the row's log-sum-exp summed in float (about
  // 2^-24 sqrt(V) in practice) or in double.
  const double rel = dtype == DType::kF64 ? 1e-12 : 4e-5;
  const std::vector<T> xt = test::to_storage<T>(x);

  test::GuardedBuffer<T> a(rows * v), b(rows * v), c(rows * v);
  std::copy(xt.begin(), xt.end(), a.data());
  std::copy(xt.begin(), xt.end(), b.data());
  std::copy(xt.begin(), xt.end(), c.data());
  cpu::log_softmax<T>(a.data(), rows, v);
  double loss_b = 0, nll_b = 0, loss_c = 0, nll_c = 0;
  cpu::cross_entropy_forward<T>(b.data(), targets.data(), rows, v, pad, eps, &loss_b, &nll_b);
  cpu::cross_entropy_fused<T>(c.data(), targets.data(), rows, v, pad, eps, &loss_c, &nll_c);
  CHECK((a.intact() && b.intact() && c.intact()));
  for (const T* out : {a.data(), b.data()}) {
    const test::RoundingCheck r = test::check_rounded_once(out, lp, lp_magnitude, rel);
    INFO("log-probabilities: " << r.bad << " bad, first " << r.first);
    CHECK(r.bad == 0);
  }
  const test::RoundingCheck r = test::check_rounded_once(c.data(), grad, grad_magnitude, rel);
  INFO("dlogits: " << r.bad << " bad, first " << r.first);
  CHECK(r.bad == 0);

  // Scaled in the kernel (training's 1 / target tokens, times a loss scale): (p - q) * s rounded
  // once; for f32 and f64 the bits of scaling the unscaled gradient afterwards (cpu::scale).
  const double s = 1024.0 / 37.0;
  test::GuardedBuffer<T> d(rows * v);
  std::copy(xt.begin(), xt.end(), d.data());
  double loss_d = 0, nll_d = 0;
  cpu::cross_entropy_fused<T>(d.data(), targets.data(), rows, v, pad, eps, &loss_d, &nll_d, s);
  CHECK(d.intact());
  CHECK(loss_d == loss_c);
  CHECK(nll_d == nll_c);
  std::vector<double> scaled(grad.size()), scaled_magnitude(grad.size());
  for (std::size_t i = 0; i < grad.size(); ++i) {
    scaled[i] = grad[i] * s;
    scaled_magnitude[i] = grad_magnitude[i] * s;
  }
  const test::RoundingCheck rs = test::check_rounded_once(d.data(), scaled, scaled_magnitude, rel);
  INFO("scaled dlogits: " << rs.bad << " bad, first " << rs.first);
  CHECK(rs.bad == 0);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    cpu::scale<T>(c.data(), static_cast<T>(s), rows * v);
    CHECK(std::equal(c.data(), c.data() + rows * v, d.data()));
  }
  // Both kernels sum the same acc_t<T> log-probabilities: the same bits.
  CHECK(loss_b == loss_c);
  CHECK(nll_b == nll_c);
  CHECK(loss_b == Approx(loss).epsilon(rel));
  CHECK(nll_b == Approx(nll).epsilon(rel));
}

}  // namespace

DRAGOMAN_CPU_TEST_CASE("cpu cross-entropy kernels round each log-probability and gradient once, for every dtype",
                       "[kernels]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      test::with_storage_type(c.dtype, [&](auto zero) {
        using T = decltype(zero);
        for (const int64_t v : test::awkward_sizes()) check_cross_entropy_rounding<T>(c.dtype, v);
        check_cross_entropy_rounding<T>(c.dtype, 32000);  // a vocabulary-sized row
      });
    }
  }
}

}  // namespace dragoman
