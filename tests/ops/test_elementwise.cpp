// The element-wise ops: the one-line kernels, dropout's statistics and determinism, bias_backward's
// and sum_squares' thread-count independence, and the relu and dropout backward passes against
// float64 central finite differences (the CPU's tests); the ops against their formulas for every
// op case (tests/ops/op_testing.h: each device and dtype of the test binary).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "base/philox.h"
#include "core/tensor.h"
#include "device/cpu/threads.h"
#include "kernels/elementwise.h"
#include "ops/elementwise.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;
using namespace test;  // the shared helpers of tests/ops/op_testing.h

// ---- small element-wise kernels and sum_squares --------------------------------------------------

DRAGOMAN_CPU_TEST_CASE("cpu element-wise kernels compute their one-line formulas", "[kernels]") {
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

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::dropout is deterministic, keeps about 1 - p and scales by 1 / (1 - p)",
                                "[kernels]", float, double) {
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

DRAGOMAN_CPU_TEST_CASE("cpu::bias_backward gives the same bits with 1 and 2 threads", "[kernels]") {
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
  CHECK(cpu::compute_threads() ==
        cpu::resolve_threads(0, ""));  // ScopedThreads restored the default (OMP_NUM_THREADS or all cores)
}

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::sum_squares accumulates in double independently of the thread count", "[kernels]",
                                float, double) {
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

DRAGOMAN_CPU_TEST_CASE("ops::relu gradients match finite differences", "[ops]") {
  Tensor x = random64({3, 7}, 10);  // perturbed by check_gradient
  const Tensor r = random64({3, 7}, 11);
  const auto loss = [&] { return dot(ops::relu(x), r); };
  const Tensor dx = ops::relu_backward(ops::relu(x), r);
  check_gradient("x", loss, x, dx);
}

DRAGOMAN_CPU_TEST_CASE("ops::swish gradients match finite differences", "[ops]") {
  Tensor x = random64({3, 7}, 14);  // perturbed by check_gradient
  const Tensor r = random64({3, 7}, 15);
  const auto loss = [&] { return dot(ops::swish(x), r); };
  const Tensor dx = ops::swish_backward(x, r);
  check_gradient("x", loss, x, dx);
  // Literal values: swish(0) = 0, swish(1) = 1 / (1 + e^-1), swish(-50) = -50 e^-50 / (1 + e^-50).
  const Tensor y = ops::swish(Tensor::from_vector<double>({0.0, 1.0, -50.0}, {3}));
  CHECK(y.to_vector<double>()[0] == 0.0);
  CHECK(y.to_vector<double>()[1] == Approx(0.7310585786300049).epsilon(1e-15));
  CHECK(y.to_vector<double>()[2] == Approx(-50.0 / (1.0 + std::exp(50.0))).epsilon(1e-14));
}

DRAGOMAN_CPU_TEST_CASE("ops::dropout_add is ops::add after ops::dropout and its gradients match finite differences",
                       "[ops]") {
  Tensor x = random64({4, 6}, 14), y = random64({4, 6}, 15);  // perturbed by check_gradient
  const Tensor r = random64({4, 6}, 16);
  const double p = 0.3;
  CHECK(ops::dropout_add(x, y, p, 21, 22).to_vector<double>() ==
        ops::add(x, ops::dropout(y, p, 21, 22)).to_vector<double>());
  CHECK(ops::dropout_add(x, y, 0.0, 21, 22).to_vector<double>() == ops::add(x, y).to_vector<double>());
  const auto loss = [&] { return dot(ops::dropout_add(x, y, p, 21, 22), r); };
  check_gradient("x", loss, x, r);                           // d/dx = the gradient itself
  check_gradient("y", loss, y, ops::dropout(r, p, 21, 22));  // d/dy = dropout's backward
  CHECK_THROWS_WITH(ops::dropout_add(x, random64({4, 5}, 17), p, 21, 22), Catch::Contains("sizes differ"));
  CHECK_THROWS_WITH(ops::dropout_add(x, y, 1.0, 21, 22), Catch::Contains("probability"));
}

DRAGOMAN_CPU_TEST_CASE("ops::dropout gradients match finite differences", "[ops]") {
  Tensor x = random64({4, 6}, 12);  // perturbed by check_gradient
  const Tensor r = random64({4, 6}, 13);
  const double p = 0.3;
  const auto loss = [&] { return dot(ops::dropout(x, p, 21, 22), r); };
  const Tensor dx = ops::dropout(r, p, 21, 22);  // the backward pass: the same mask on the gradient
  check_gradient("x", loss, x, dx);
  const std::vector<double> y = ops::dropout(x, p, 21, 22).to_vector<double>();
  CHECK(std::count(y.begin(), y.end(), 0.0) > 0);  // the mask does drop something here
  CHECK(ops::dropout(x, 0.0, 21, 22).shares_storage(x));
}

// ---- every storage type ---------------------------------------------------------------------------

namespace {

// The element-wise kernels over T at n elements (rows of n columns for the bias kernels) against
// references computed in acc_t<T> (float for bf16 and f16) from the rounded inputs and rounded once.
template <typename T>
void check_elementwise_kernels(int64_t n) {
  using A = acc_t<T>;
  const int64_t rows = 3;
  const std::vector<T> a = test::to_storage<T>(test::random_doubles(n, 200, 2.0));
  const std::vector<T> b = test::to_storage<T>(test::random_doubles(n, 201, 2.0));
  const std::vector<double> wa = test::widen(a.data(), n), wb = test::widen(b.data(), n);
  std::vector<double> exact(at(n));

  test::GuardedBuffer<T> y(n);
  cpu::add<T>(a.data(), b.data(), y.data(), n);
  for (int64_t i = 0; i < n; ++i) exact[at(i)] = static_cast<A>(wa[at(i)]) + static_cast<A>(wb[at(i)]);
  check_guarded_rounding("add", y, exact, exact, 0.0);

  test::GuardedBuffer<T> sum(n);
  std::copy(a.begin(), a.end(), sum.data());
  cpu::accumulate<T>(sum.data(), b.data(), n);
  check_guarded_rounding("accumulate", sum, exact, exact, 0.0);

  const A s = static_cast<A>(0.37);
  test::GuardedBuffer<T> scaled(n);
  std::copy(a.begin(), a.end(), scaled.data());
  cpu::scale<T>(scaled.data(), s, n);
  for (int64_t i = 0; i < n; ++i) exact[at(i)] = static_cast<A>(wa[at(i)]) * s;
  check_guarded_rounding("scale", scaled, exact, exact, 0.0);

  test::GuardedBuffer<T> r(n);
  cpu::relu_forward<T>(a.data(), r.data(), n);
  for (int64_t i = 0; i < n; ++i) exact[at(i)] = wa[at(i)] > 0 ? wa[at(i)] : 0.0;
  check_guarded_rounding("relu_forward", r, exact, exact, 0.0);
  test::GuardedBuffer<T> dr(n);
  cpu::relu_backward<T>(r.data(), b.data(), dr.data(), n);
  for (int64_t i = 0; i < n; ++i) exact[at(i)] = wa[at(i)] > 0 ? wb[at(i)] : 0.0;
  check_guarded_rounding("relu_backward", dr, exact, exact, 0.0);

  // swish: computed in acc_t<T> with its exp, rounded once: within a few acc_t ulps of the exact value.
  const double exp_error = std::is_same_v<A, double> ? 1e-14 : 1e-6;
  test::GuardedBuffer<T> sw(n);
  cpu::swish_forward<T>(a.data(), sw.data(), n);
  for (int64_t i = 0; i < n; ++i) exact[at(i)] = wa[at(i)] / (1.0 + std::exp(-wa[at(i)]));
  check_guarded_rounding("swish_forward", sw, exact, test::one_plus_abs(exact), exp_error);
  test::GuardedBuffer<T> dsw(n);
  cpu::swish_backward<T>(a.data(), b.data(), dsw.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const double sig = 1.0 / (1.0 + std::exp(-wa[at(i)]));
    exact[at(i)] = wb[at(i)] * sig * (1.0 + wa[at(i)] * (1.0 - sig));
  }
  check_guarded_rounding("swish_backward", dsw, exact, test::one_plus_abs(exact), exp_error);

  // dropout: x * keep_scale in acc_t<T>, keep_scale itself not rounded to T.
  const double p = 0.3;
  const A keep_scale = static_cast<A>(1.0 / (1.0 - p));
  test::GuardedBuffer<T> dropped(n);
  cpu::dropout<T>(a.data(), dropped.data(), n, p, 42, 7);
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = philox::uniform(42, 7, static_cast<std::uint64_t>(i)) >= static_cast<float>(p);
    exact[at(i)] = keep ? static_cast<A>(wa[at(i)]) * keep_scale : 0.0;
  }
  check_guarded_rounding("dropout", dropped, exact, exact, 0.0);

  // dropout_add: b + dropout(a), bit for bit the add of the dropped values; in place over either operand too.
  test::GuardedBuffer<T> fused(n), expected_sum(n);
  cpu::dropout_add<T>(b.data(), a.data(), fused.data(), n, p, 42, 7);
  cpu::add<T>(b.data(), dropped.data(), expected_sum.data(), n);
  CHECK(fused.intact());
  const auto bytes = static_cast<std::size_t>(n) * sizeof(T);
  CHECK(std::memcmp(fused.data(), expected_sum.data(), bytes) == 0);
  std::vector<T> over_x = b, over_y = a;
  cpu::dropout_add<T>(over_x.data(), a.data(), over_x.data(), n, p, 42, 7);
  cpu::dropout_add<T>(b.data(), over_y.data(), over_y.data(), n, p, 42, 7);
  CHECK(std::memcmp(over_x.data(), expected_sum.data(), bytes) == 0);
  CHECK(std::memcmp(over_y.data(), expected_sum.data(), bytes) == 0);

  // bias_add over [rows, n]; bias_backward sums dy's rows in order in acc_t<T> into an acc_t<T> db.
  const std::vector<T> m = test::to_storage<T>(test::random_doubles(rows * n, 202, 2.0));
  const std::vector<double> wm = test::widen(m.data(), rows * n);
  test::GuardedBuffer<T> biased(rows * n);
  std::copy(m.begin(), m.end(), biased.data());
  cpu::bias_add<T>(biased.data(), b.data(), rows, n);
  std::vector<double> exact_rows(at(rows * n));
  for (int64_t i = 0; i < rows * n; ++i) exact_rows[at(i)] = static_cast<A>(wm[at(i)]) + static_cast<A>(wb[at(i % n)]);
  check_guarded_rounding("bias_add", biased, exact_rows, exact_rows, 0.0);
  const std::vector<A> db0 = test::to_storage<A>(test::random_doubles(n, 203));
  test::GuardedBuffer<A> db(n);
  std::copy(db0.begin(), db0.end(), db.data());
  cpu::bias_backward<T>(m.data(), db.data(), rows, n);
  for (int64_t c = 0; c < n; ++c) {
    A column = 0;
    for (int64_t row = 0; row < rows; ++row) column += static_cast<A>(wm[at(row * n + c)]);
    exact[at(c)] = db0[at(c)] + column;
  }
  check_guarded_rounding("bias_backward", db, exact, exact, 0.0);

  // sum_squares: double for every T; n <= 65536 is one block, summed in index order, or for f32 in
  // sum_squares_f32's 16 lanes (kernels/cpu/vector_math.h, tested there bit for bit): within the
  // double sum's rounding of the plain loop.
  double squares = 0;
  for (const double v : wa) squares += v * v;
  if (std::is_same_v<T, float>) {
    CHECK(cpu::sum_squares<T>(a.data(), n) == Approx(squares).epsilon(1e-14 * (1 + n)));
  } else {
    CHECK(cpu::sum_squares<T>(a.data(), n) == squares);
  }
}

}  // namespace

DRAGOMAN_CPU_TEST_CASE("cpu element-wise kernels round each result once, in every storage type", "[kernels]") {
  std::vector<int64_t> sizes = test::awkward_sizes();
  sizes.push_back(32000);  // a vocabulary-sized row (the output projection's bias)
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      test::with_storage_type(c.dtype, [&](auto zero) {
        using T = decltype(zero);
        for (const int64_t n : sizes) {
          INFO("n " << n);
          check_elementwise_kernels<T>(n);
        }
      });
    }
  }
}

TEST_CASE("ops element-wise ops give their kernels' results in every dtype", "[ops]") {
  const int64_t n = 33;
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const std::vector<double> av = test::random_doubles(n, 210, 2.0), bv = test::random_doubles(n, 211, 2.0);
      const Tensor a = test::from_doubles(av, {3, 11}, c.dtype, c.device);
      const Tensor b = test::from_doubles(bv, {3, 11}, c.dtype, c.device);
      const std::vector<double> ra = test::to_doubles(a), rb = test::to_doubles(b);
      // Each op's result against the same formula on the rounded inputs, within one rounding.
      const double u = test::unit_roundoff(c.dtype);
      const auto expect = [&](const char* what, const Tensor& got, const std::vector<double>& exact) {
        INFO(what);
        CHECK(got.dtype() == c.dtype);
        CHECK(test::max_relative_error(test::to_doubles(got), exact) <= u);
      };
      std::vector<double> sum(at(n)), relu(at(n)), scaled(at(n));
      for (int64_t i = 0; i < n; ++i) {
        sum[at(i)] = ra[at(i)] + rb[at(i)];
        relu[at(i)] = std::max(ra[at(i)], 0.0);
        scaled[at(i)] = ra[at(i)] * 0.5;
      }
      expect("add", ops::add(a, b), sum);
      Tensor y = a.clone();
      ops::add_(y, b);
      expect("add_", y, sum);
      Tensor z = a.clone();
      ops::scale_(z, 0.5);
      expect("scale_", z, scaled);
      const Tensor r = ops::relu(a);
      expect("relu", r, relu);
      expect("relu_backward", ops::relu_backward(r, b), [&] {
        std::vector<double> d(at(n));
        for (int64_t i = 0; i < n; ++i) d[at(i)] = ra[at(i)] > 0 ? rb[at(i)] : 0.0;
        return d;
      }());
      CHECK(ops::dropout(a, 0.25, 1, 2).dtype() == c.dtype);
      double squares = 0;
      for (const double v : ra) squares += v * v;
      CHECK(ops::sum_squares(a) == Approx(squares).epsilon(1e-15));
    }
  }
}

}  // namespace dragoman
