// The element-wise ops: the one-line kernels, dropout's statistics and determinism, bias_backward's
// and sum_squares' thread-count independence, and the relu and dropout backward passes against
// float64 central finite differences.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "core/threads.h"
#include "kernels/cpu/elementwise.h"
#include "ops/elementwise.h"
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

// ---- small element-wise kernels and sum_squares --------------------------------------------------

TEST_CASE("cpu element-wise kernels compute their one-line formulas", "[kernels]") {
  const std::vector<double> a = {1, -2, 3, -4, 0, 6}, b = {0.5, 0.5, -1, 2, 3, -6};
  std::vector<double> y(6);
  cpu::add<double>(a.data(), b.data(), y.data(), 6);
  CHECK(y == std::vector<double>{1.5, -1.5, 2, -2, 3, 0});
  cpu::accumulate<double>(y.data(), a.data(), 6);
  CHECK(y == std::vector<double>{2.5, -3.5, 5, -6, 3, 6});
  cpu::scale<double>(y.data(), 2.0, 6);
  CHECK(y == std::vector<double>{5, -7, 10, -12, 6, 12});
  std::vector<double> r(6), dr(6);
  cpu::relu_forward<double>(a.data(), r.data(), 6);
  CHECK(r == std::vector<double>{1, 0, 3, 0, 0, 6});
  cpu::relu_backward<double>(r.data(), b.data(), dr.data(), 6);
  CHECK(dr == std::vector<double>{0.5, 0, -1, 0, 0, -6});
  std::vector<double> m = a;  // [2, 3] plus bias [3]
  const std::vector<double> bias = {10, 20, 30};
  cpu::bias_add<double>(m.data(), bias.data(), 2, 3);
  CHECK(m == std::vector<double>{11, 18, 33, 6, 20, 36});
}

// ---- dropout ------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("cpu::dropout is deterministic, keeps about 1 - p and scales by 1 / (1 - p)", "[kernels]", float,
                   double) {
  using T = TestType;
  const int64_t n = 100003;  // not a multiple of 4: the kernel takes Philox blocks of 4
  const double p = 0.3;
  const std::vector<T> x = random_values<T>(n, 80, 0.5, 1.5);  // in [1, 2): never 0
  std::vector<T> y1(at(n)), y1_again(at(n)), y_stream(at(n)), y_seed(at(n)), y_two(at(n));
  {
    ScopedThreads threads(1);
    cpu::dropout<T>(x.data(), y1.data(), n, p, 42, 7);
    cpu::dropout<T>(x.data(), y1_again.data(), n, p, 42, 7);
  }
  {
    ScopedThreads threads(2);
    cpu::dropout<T>(x.data(), y_two.data(), n, p, 42, 7);
  }
  cpu::dropout<T>(x.data(), y_stream.data(), n, p, 42, 8);
  cpu::dropout<T>(x.data(), y_seed.data(), n, p, 43, 7);
  CHECK(y1 == y1_again);
  CHECK(y1 == y_two);
  CHECK(y1 != y_stream);
  CHECK(y1 != y_seed);

  int64_t kept = 0, mask_mismatches = 0, scale_mismatches = 0, agree_with_other_stream = 0;
  const T keep_scale = static_cast<T>(1.0 / (1.0 - p));
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = y1[at(i)] != T(0);
    kept += keep ? 1 : 0;
    mask_mismatches += keep != (philox::uniform(42, 7, static_cast<std::uint64_t>(i)) >= static_cast<float>(p));
    agree_with_other_stream += keep == (y_stream[at(i)] != T(0));
    scale_mismatches += keep && y1[at(i)] != x[at(i)] * keep_scale;
  }
  CHECK(mask_mismatches == 0);
  CHECK(scale_mismatches == 0);
  // Binomial(1e5, 0.7): standard deviation 0.0015 of the fraction.
  CHECK(static_cast<double>(kept) / n == Approx(1.0 - p).margin(0.01));
  // Independent masks agree on p^2 + (1-p)^2 = 0.58 of the elements.
  CHECK(static_cast<double>(agree_with_other_stream) / n == Approx(0.58).margin(0.01));

  // In place gives the same result.
  std::vector<T> in_place = x;
  cpu::dropout<T>(in_place.data(), in_place.data(), n, p, 42, 7);
  CHECK(in_place == y1);
}

TEST_CASE("cpu::bias_backward gives the same bits with 1 and 2 threads", "[kernels]") {
  // Sizes with several column blocks, so that two threads really split the work.
  const int64_t rows = 257, cols = 200;
  const std::vector<float> dy = random_values<float>(rows * cols, 90);

  // bias_backward accumulates into db.
  std::vector<float> db1 = random_values<float>(cols, 91), db2 = db1;
  const std::vector<float> db0 = db1;
  {
    ScopedThreads threads(1);
    cpu::bias_backward<float>(dy.data(), db1.data(), rows, cols);
  }
  {
    ScopedThreads threads(2);
    cpu::bias_backward<float>(dy.data(), db2.data(), rows, cols);
  }
  CHECK(db1 == db2);
  std::vector<double> ref_db(db0.begin(), db0.end());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) ref_db[at(c)] += dy[at(r * cols + c)];
  }
  CHECK(max_abs_difference(db1, ref_db) < 1e-4);
  CHECK(compute_threads() ==
        resolve_threads(0, ""));  // ScopedThreads restored the default (OMP_NUM_THREADS or all cores)
}

TEMPLATE_TEST_CASE("cpu::sum_squares accumulates in double independently of the thread count", "[kernels]", float,
                   double) {
  using T = TestType;
  const std::vector<T> small = {T(1), T(-2), T(3)};
  CHECK(cpu::sum_squares<T>(small.data(), 3) == 14.0);
  CHECK(cpu::sum_squares<T>(small.data(), 0) == 0.0);
  const int64_t n = 200003;  // several blocks of 65536 and a partial one
  const std::vector<T> x = random_values<T>(n, 100);
  double expected = 0;
  for (const T value : x) expected += static_cast<double>(value) * static_cast<double>(value);
  double one = 0, two = 0;
  {
    ScopedThreads threads(1);
    one = cpu::sum_squares<T>(x.data(), n);
  }
  {
    ScopedThreads threads(2);
    two = cpu::sum_squares<T>(x.data(), n);
  }
  CHECK(one == two);
  CHECK(one == Approx(expected).epsilon(1e-12));
}

TEST_CASE("ops::relu gradients match finite differences", "[ops]") {
  const Tensor x = random64({3, 7}, 10), r = random64({3, 7}, 11);
  const auto loss = [&] { return dot(ops::relu(x), r); };
  const Tensor dx = ops::relu_backward(ops::relu(x), r);
  check_gradient("x", loss, x, dx);
}

TEST_CASE("ops::dropout gradients match finite differences", "[ops]") {
  const Tensor x = random64({4, 6}, 12), r = random64({4, 6}, 13);
  const double p = 0.3;
  const auto loss = [&] { return dot(ops::dropout(x, p, 21, 22), r); };
  const Tensor dx = ops::dropout(r, p, 21, 22);  // the backward pass: the same mask on the gradient
  check_gradient("x", loss, x, dx);
  const std::vector<double> y = ops::dropout(x, p, 21, 22).to_vector<double>();
  CHECK(std::count(y.begin(), y.end(), 0.0) > 0);  // the mask does drop something here
  CHECK(ops::dropout(x, 0.0, 21, 22).shares_storage(x));
}

}  // namespace dragoman
