// Layer norm: cpu::layer_norm_forward against the formula, layer_norm_backward's thread-count
// independence, and ops::layer_norm's backward pass against float64 central finite differences.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/threads.h"
#include "kernels/cpu/layer_norm.h"
#include "ops/layer_norm.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;
using test::at;
using test::check_gradient;
using test::dot;
using test::ids_tensor;
using test::max_abs_difference;
using test::random64;
using test::random_values;
using test::ScopedThreads;
using test::tolerance;
using test::zeros64;

// ---- layer norm ---------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("cpu::layer_norm_forward matches the formula", "[kernels]", float, double) {
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

TEST_CASE("cpu::layer_norm_backward gives the same bits with 1 and 2 threads", "[kernels]") {
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

TEST_CASE("ops::layer_norm gradients match finite differences", "[ops]") {
  const Tensor x = random64({2, 3, 6}, 14, 1.0, 0.5);
  const Tensor w = random64({6}, 15, 0.5, 1.0), b = random64({6}, 16, 0.5);
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

}  // namespace dragoman
