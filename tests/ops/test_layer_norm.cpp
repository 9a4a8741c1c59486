// Layer norm: cpu::layer_norm_forward against the formula, layer_norm_backward's thread-count
// independence, and ops::layer_norm's backward pass against float64 central finite differences
// (the CPU's tests); the fused ops against their parts for every op case (each device and dtype).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/tensor.h"
#include "device/cpu/threads.h"
#include "kernels/layer_norm.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;
using namespace test;  // the shared helpers of tests/ops/op_testing.h

// ---- layer norm ---------------------------------------------------------------------------------

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::layer_norm_forward matches the formula", "[kernels]", float, double) {
  using T = TestType;
  const int64_t rows = 3, d = 7;
  const double eps = 1e-5;
  const std::vector<T> x = random_values<T>(rows * d, 40, 2.0, 3.0);  // mean far from 0
  const std::vector<T> w = random_values<T>(d, 41, 0.5, 1.0), bias = random_values<T>(d, 42);
  std::vector<T> y(at(rows * d)), mean(at(rows)), rstd(at(rows));
  cpu::layer_norm_forward<T>(x.data(), w.data(), bias.data(), y.data(), mean.data(), rstd.data(), rows, d, eps);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mu += x[at(r * d + i)];
    mu /= d;
    for (int64_t i = 0; i < d; ++i) var += (x[at(r * d + i)] - mu) * (x[at(r * d + i)] - mu);
    var /= d;  // biased
    CHECK(mean[at(r)] == Approx(mu).margin(tolerance<T>()));
    CHECK(rstd[at(r)] == Approx(1.0 / std::sqrt(var + eps)).epsilon(tolerance<T>()));
    for (int64_t i = 0; i < d; ++i) {
      const double expected = (x[at(r * d + i)] - mu) / std::sqrt(var + eps) * w[at(i)] + bias[at(i)];
      CHECK(y[at(r * d + i)] == Approx(expected).margin(4 * tolerance<T>()));
    }
  }
}

DRAGOMAN_CPU_TEST_CASE("cpu::layer_norm_backward gives the same bits with 1 and 2 threads", "[kernels]") {
  // Sizes with several column blocks, so that two threads really split the work.
  const int64_t rows = 257, cols = 200;
  const std::vector<float> dy = random_values<float>(rows * cols, 90);

  // layer_norm_backward: dx is assigned, dweight and dbias accumulated.
  const std::vector<float> x = random_values<float>(rows * cols, 95, 1.0, 0.5);
  const std::vector<float> w = random_values<float>(cols, 96, 0.5, 1.0), b = random_values<float>(cols, 97);
  std::vector<float> y(at(rows * cols)), mean(at(rows)), rstd(at(rows));
  cpu::layer_norm_forward<float>(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, cols, 1e-5);
  std::vector<float> dx1(at(rows * cols)), dx2(at(rows * cols), 123.0f);
  std::vector<float> dw1 = random_values<float>(cols, 98), dw2 = dw1, dbias1 = random_values<float>(cols, 99),
                     dbias2 = dbias1;
  {
    ScopedThreads threads(1);
    cpu::layer_norm_backward<float>(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx1.data(), dw1.data(),
                                    dbias1.data(), rows, cols);
  }
  {
    ScopedThreads threads(2);
    cpu::layer_norm_backward<float>(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx2.data(), dw2.data(),
                                    dbias2.data(), rows, cols);
  }
  CHECK(dx1 == dx2);
  CHECK(dw1 == dw2);
  CHECK(dbias1 == dbias2);
}

DRAGOMAN_CPU_TEST_CASE("ops::layer_norm gradients match finite differences", "[ops]") {
  // x, w, b are perturbed by check_gradient.
  Tensor x = random64({2, 3, 6}, 14, 1.0, 0.5);
  Tensor w = random64({6}, 15, 0.5, 1.0), b = random64({6}, 16, 0.5);
  const Tensor r = random64({2, 3, 6}, 17);
  const double eps = 1e-5;
  const auto loss = [&] { return dot(ops::layer_norm(x, w, b, eps, nullptr), r); };
  ops::LayerNormSaved saved;
  ops::layer_norm(x, w, b, eps, &saved);
  CHECK(saved.mean.shape() == Shape{6});
  Tensor dw = zeros64({6}), db = zeros64({6});
  const Tensor dx = ops::layer_norm_backward(r, x, w, saved, dw, db);
  check_gradient("x", loss, x, dx);
  check_gradient("weight", loss, w, dw);
  check_gradient("bias", loss, b, db);
}

// ---- every storage type ---------------------------------------------------------------------------

namespace {

// layer_norm_forward and layer_norm_backward over T with rows of d elements against references in
// double from the rounded inputs (and, for the backward pass, the kernel's own statistics). The
// kernel sums in acc_t<T> in index order, the reference in double: they differ by that summation's
// error, at most about d * u (u: acc_t<T>'s unit roundoff) of the terms' magnitude, so each result
// must be one rounding to T (or to acc_t<T> for the statistics and parameter gradients) of a value
// within 4 d u of the exact one. For bf16 and f16 that interval is far below T's rounding step:
// the results are the bits of the double reference rounded once, except next to a tie, where the
// neighbour is allowed (1 ulp).
template <typename T>
void check_layer_norm_kernels(int64_t d) {
  using A = acc_t<T>;
  const int64_t rows = 3;
  const double eps = 1e-5, u = std::is_same_v<A, double> ? 0x1p-53 : 0x1p-24, rel = 4.0 * static_cast<double>(d) * u;
  const std::vector<T> x = test::to_storage<T>(test::random_doubles(rows * d, 220, 2.0, 1.0));
  const std::vector<T> w = test::to_storage<T>(test::random_doubles(d, 221, 0.5, 1.0));
  const std::vector<T> bias = test::to_storage<T>(test::random_doubles(d, 222));
  const std::vector<T> dy = test::to_storage<T>(test::random_doubles(rows * d, 223));
  const std::vector<double> wx = test::widen(x.data(), rows * d), ww = test::widen(w.data(), d),
                            wbias = test::widen(bias.data(), d), wdy = test::widen(dy.data(), rows * d);

  test::GuardedBuffer<T> y(rows * d);
  test::GuardedBuffer<A> mean(rows), rstd(rows);
  cpu::layer_norm_forward<T>(x.data(), w.data(), bias.data(), y.data(), mean.data(), rstd.data(), rows, d, eps);
  std::vector<double> mu(at(rows)), rs(at(rows)), stat_magnitude(at(rows)), exact_y(at(rows * d)),
      y_magnitude(at(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, sum_abs = 0, sq = 0;
    for (int64_t i = 0; i < d; ++i) sum += wx[at(r * d + i)], sum_abs += std::fabs(wx[at(r * d + i)]);
    mu[at(r)] = sum / static_cast<double>(d);
    for (int64_t i = 0; i < d; ++i) sq += (wx[at(r * d + i)] - mu[at(r)]) * (wx[at(r * d + i)] - mu[at(r)]);
    rs[at(r)] = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
    stat_magnitude[at(r)] = 1.0 + sum_abs / static_cast<double>(d) + rs[at(r)];
    for (int64_t i = 0; i < d; ++i) {
      const double xw = (wx[at(r * d + i)] - mu[at(r)]) * rs[at(r)] * ww[at(i)];
      exact_y[at(r * d + i)] = xw + wbias[at(i)];
      y_magnitude[at(r * d + i)] = 1.0 + std::fabs(xw) + std::fabs(wbias[at(i)]);
    }
  }
  check_guarded_rounding("mean", mean, mu, stat_magnitude, rel);
  check_guarded_rounding("rstd", rstd, rs, stat_magnitude, rel);
  check_guarded_rounding("y", y, exact_y, y_magnitude, rel);

  // Backward, from the kernel's statistics; dweight and dbias accumulate onto random values.
  const std::vector<double> wmean = test::widen(mean.data(), rows), wrstd = test::widen(rstd.data(), rows);
  const std::vector<A> dw0 = test::to_storage<A>(test::random_doubles(d, 224)),
                       db0 = test::to_storage<A>(test::random_doubles(d, 225));
  test::GuardedBuffer<T> dx(rows * d);
  test::GuardedBuffer<A> dw(d), db(d);
  std::copy(dw0.begin(), dw0.end(), dw.data());
  std::copy(db0.begin(), db0.end(), db.data());
  cpu::layer_norm_backward<T>(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx.data(), dw.data(), db.data(),
                              rows, d);
  std::vector<double> exact_dx(at(rows * d)), dx_magnitude(at(rows * d));
  std::vector<double> exact_dw(dw0.begin(), dw0.end()), exact_db(db0.begin(), db0.end());
  std::vector<double> dw_magnitude(at(d), 1.0), db_magnitude(at(d), 1.0);
  for (int64_t r = 0; r < rows; ++r) {
    double g_sum = 0, gx_sum = 0, g_abs = 0, gx_abs = 0;
    for (int64_t i = 0; i < d; ++i) {
      const double xhat = (wx[at(r * d + i)] - wmean[at(r)]) * wrstd[at(r)], g = wdy[at(r * d + i)] * ww[at(i)];
      g_sum += g, gx_sum += g * xhat, g_abs += std::fabs(g), gx_abs += std::fabs(g * xhat);
      exact_dw[at(i)] += wdy[at(r * d + i)] * xhat;
      exact_db[at(i)] += wdy[at(r * d + i)];
      dw_magnitude[at(i)] += std::fabs(wdy[at(r * d + i)] * xhat);
      db_magnitude[at(i)] += std::fabs(wdy[at(r * d + i)]);
    }
    const double n = static_cast<double>(d);
    for (int64_t i = 0; i < d; ++i) {
      const double xhat = (wx[at(r * d + i)] - wmean[at(r)]) * wrstd[at(r)], g = wdy[at(r * d + i)] * ww[at(i)];
      exact_dx[at(r * d + i)] = wrstd[at(r)] * (g - g_sum / n - xhat * gx_sum / n);
      dx_magnitude[at(r * d + i)] = 1.0 + wrstd[at(r)] * (std::fabs(g) + g_abs / n + std::fabs(xhat) * gx_abs / n);
    }
  }
  check_guarded_rounding("dx", dx, exact_dx, dx_magnitude, rel);
  check_guarded_rounding("dweight", dw, exact_dw, dw_magnitude, 4.0 * (rows + 1) * u);
  check_guarded_rounding("dbias", db, exact_db, db_magnitude, 4.0 * (rows + 1) * u);
}

}  // namespace

DRAGOMAN_CPU_TEST_CASE("cpu::layer_norm_forward and layer_norm_backward round each result once, in every storage type",
                       "[kernels]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      test::with_storage_type(c.dtype, [&](auto zero) {
        using T = decltype(zero);
        for (const int64_t d : test::awkward_sizes()) {
          INFO("d " << d);
          check_layer_norm_kernels<T>(d);
        }
      });
    }
  }
}

TEST_CASE("ops::add_layer_norm gives the bits of ops::add then layer_norm, in every storage type", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      for (const int64_t d : test::awkward_sizes()) {
        INFO("d " << d);
        const Tensor x = test::from_doubles(test::random_doubles(5 * d, 240, 2.0, 1.0), {5, 1, d}, c.dtype, c.device);
        const Tensor r = test::from_doubles(test::random_doubles(5 * d, 241, 1.0), {5, 1, d}, c.dtype, c.device);
        const Tensor w = test::from_doubles(test::random_doubles(d, 242, 0.5, 1.0), {d}, c.dtype, c.device);
        const Tensor b = test::from_doubles(test::random_doubles(d, 243), {d}, c.dtype, c.device);
        const Tensor fused = ops::add_layer_norm(x, r, w, b, 1e-5);
        CHECK(fused.shape() == x.shape());
        CHECK(test::to_doubles(fused) == test::to_doubles(ops::layer_norm(ops::add(x, r), w, b, 1e-5, nullptr)));
      }
      const Tensor x = test::from_doubles(test::random_doubles(6, 244), {2, 3}, c.dtype, c.device);
      const Tensor w = test::from_doubles({1, 1, 1}, {3}, c.dtype, c.device), b = Tensor::zeros({3}, c.dtype, c.device);
      CHECK_THROWS_WITH(ops::add_layer_norm(x, x.narrow(1, 0, 2), w, b, 1e-5), Catch::Contains("residual"));
    }
  }
}

TEST_CASE("ops::layer_norm_backward_dropout gives layer_norm_backward's bits and the dropout of its dx", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const DType acc = accumulator_dtype(c.dtype);
      for (const int64_t d : test::awkward_sizes()) {
        INFO("d " << d);
        const Tensor x = test::from_doubles(test::random_doubles(5 * d, 250, 2.0, 1.0), {5, 1, d}, c.dtype, c.device);
        const Tensor dy = test::from_doubles(test::random_doubles(5 * d, 251, 1.0), {5, 1, d}, c.dtype, c.device);
        const Tensor w = test::from_doubles(test::random_doubles(d, 252, 0.5, 1.0), {d}, c.dtype, c.device);
        const Tensor b = test::from_doubles(test::random_doubles(d, 253), {d}, c.dtype, c.device);
        ops::LayerNormSaved saved;
        ops::layer_norm(x, w, b, 1e-5, &saved);
        Tensor dw = Tensor::zeros({d}, acc, c.device), db = Tensor::zeros({d}, acc, c.device);
        Tensor dw2 = Tensor::zeros({d}, acc, c.device), db2 = Tensor::zeros({d}, acc, c.device);
        const Tensor dx = ops::layer_norm_backward(dy, x, w, saved, dw, db);
        const ops::LayerNormDropoutGrads g = ops::layer_norm_backward_dropout(dy, x, w, saved, dw2, db2, 0.3, 17, 4);
        CHECK(test::to_doubles(g.dx) == test::to_doubles(dx));
        CHECK(test::to_doubles(g.dropped) == test::to_doubles(ops::dropout(dx, 0.3, 17, 4)));
        CHECK(test::to_doubles(dw2) == test::to_doubles(dw));
        CHECK(test::to_doubles(db2) == test::to_doubles(db));
        // p = 0: dropped is dx itself.
        const ops::LayerNormDropoutGrads none = ops::layer_norm_backward_dropout(dy, x, w, saved, dw2, db2, 0, 17, 4);
        CHECK(none.dropped.shares_storage(none.dx));
        CHECK(test::to_doubles(none.dx) == test::to_doubles(dx));
      }
      const Tensor x = test::from_doubles(test::random_doubles(6, 254), {2, 3}, c.dtype, c.device);
      const Tensor w = test::from_doubles({1, 1, 1}, {3}, c.dtype, c.device), b = Tensor::zeros({3}, c.dtype, c.device);
      ops::LayerNormSaved saved;
      ops::layer_norm(x, w, b, 1e-5, &saved);
      Tensor dw = Tensor::zeros({3}, acc, c.device), db = Tensor::zeros({3}, acc, c.device);
      DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward_dropout(x, x, w, saved, dw, db, 1.0, 1, 2),
                              "layer_norm_backward_dropout", "dropout probability must be in [0, 1)");
      DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward_dropout(x, x, w, saved, dw, db, -0.1, 1, 2),
                              "layer_norm_backward_dropout", "dropout probability must be in [0, 1)");
    }
  }
}

TEST_CASE("ops::layer_norm keeps statistics and parameter gradients in the accumulator dtype", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const int64_t d = 7;
      const DType acc = accumulator_dtype(c.dtype);
      const Tensor x = test::from_doubles(test::random_doubles(2 * 3 * d, 230, 1.0, 0.5), {2, 3, d}, c.dtype, c.device);
      const Tensor w = test::from_doubles(test::random_doubles(d, 231, 0.5, 1.0), {d}, c.dtype, c.device);
      const Tensor b = test::from_doubles(test::random_doubles(d, 232), {d}, c.dtype, c.device);
      ops::LayerNormSaved saved;
      const Tensor y = ops::layer_norm(x, w, b, 1e-5, &saved);
      CHECK(y.dtype() == c.dtype);
      CHECK(saved.mean.dtype() == acc);
      CHECK(saved.rstd.dtype() == acc);
      Tensor dw = Tensor::zeros({d}, acc, c.device), db = Tensor::zeros({d}, acc, c.device);
      const Tensor dx = ops::layer_norm_backward(y, x, w, saved, dw, db);
      CHECK(dx.dtype() == c.dtype);
      CHECK(ops::sum_squares(db) > 0);
      // The bias gradient is the column sum of dy (= y here), accumulated in the accumulator dtype.
      const std::vector<double> yv = test::to_doubles(y), dbv = test::to_doubles(db);
      for (int64_t i = 0; i < d; ++i) {
        double column = 0;
        for (int64_t r = 0; r < 6; ++r) column += yv[at(r * d + i)];
        CHECK(dbv[at(i)] == Approx(column).margin(1e-6));
      }
      if (acc != c.dtype) {  // a parameter gradient of the activations' dtype is refused
        Tensor wrong = Tensor::zeros({d}, c.dtype, c.device);
        DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward(y, x, w, saved, wrong, db), "layer_norm_backward",
                                "accumulator dtype");
      }
    }
  }
}

}  // namespace dragoman
