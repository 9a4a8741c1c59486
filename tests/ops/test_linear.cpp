// gemm and the linear/matmul ops: the raw-pointer cpu::gemm against naive loops (every transpose
// combination, leading dimensions wider than the matrices, k == 0, strided batches), and ops::linear's
// backward pass against float64 central finite differences; for every OpCase (f64, f32, bf16, f16)
// at awkward sizes, gemm_bias, gemm and the fp32-gradient gemm against a double reference from the
// rounded inputs, rounded once (test::check_rounded_once), with sentinels after every output (the
// CPU's tests); the linear ops' fused paths and gradient dtypes for every op case (each device and
// dtype of the test binary: tests/ops/op_testing.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/gemm.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;
using namespace test;  // the shared helpers of tests/ops/op_testing.h

// ---- gemm over every storage type ----------------------------------------------------------------

namespace {

// The product of [rows, inner] by [inner, cols], both given as element functions, in double, and
// the sum of the absolute values of its terms (the scale of its summation error).
template <typename A, typename B>
void exact_product(int64_t rows, int64_t cols, int64_t inner, A a, B b, std::vector<double>& exact,
                   std::vector<double>& magnitude) {
  exact.assign(at(rows * cols), 0.0);
  magnitude.assign(at(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t p = 0; p < inner; ++p) {
        const double term = a(i, p) * b(p, j);
        exact[at(i * cols + j)] += term;
        magnitude[at(i * cols + j)] += std::fabs(term);
      }
    }
  }
}

// y = x W^T + b, dx = dy W and dW += dy^T x through the kernels for one (rows, in, out).
template <typename T>
void check_linear_kernels(DType dtype, int64_t rows, int64_t in, int64_t out) {
  using Acc = acc_t<T>;
  INFO("rows " << rows << ", in " << in << ", out " << out);
  const std::vector<double> x = test::rounded_to(test::random_doubles(rows * in, 1), dtype),
                            w = test::rounded_to(test::random_doubles(out * in, 2), dtype),
                            b = test::rounded_to(test::random_doubles(out, 3), dtype),
                            dy = test::rounded_to(test::random_doubles(rows * out, 4), dtype),
                            dw0 = test::rounded_to(test::random_doubles(out * in, 5), accumulator_dtype(dtype));
  const std::vector<T> xt = test::to_storage<T>(x), wt = test::to_storage<T>(w), bt = test::to_storage<T>(b),
                       dyt = test::to_storage<T>(dy);
  // Summation in acc_t<T>: at most (terms + 2) roundings of its unit.
  const auto rel = [&](int64_t terms) {
    return static_cast<double>(terms + 2) * test::unit_roundoff(accumulator_dtype(dtype));
  };
  std::vector<double> exact, magnitude;

  {  // y = x W^T + b, rounded once after the bias
    test::GuardedBuffer<T> y(rows * out, store<T>(std::numeric_limits<Acc>::quiet_NaN()));
    cpu::gemm_bias<T>(false, true, rows, out, in, xt.data(), in, wt.data(), in, bt.data(), y.data());
    CHECK(y.intact());
    exact_product(
        rows, out, in, [&](int64_t i, int64_t p) { return x[at(i * in + p)]; },
        [&](int64_t p, int64_t j) { return w[at(j * in + p)]; }, exact, magnitude);
    for (int64_t i = 0; i < rows * out; ++i) {
      exact[at(i)] += b[at(i % out)];
      magnitude[at(i)] += std::fabs(b[at(i % out)]);
    }
    const test::RoundingCheck r = test::check_rounded_once(y.data(), exact, magnitude, rel(in + 1));
    INFO("y: " << r.bad << " bad, first " << r.first);
    CHECK(r.bad == 0);
  }
  {  // dx = dy W (C, all NaN, is not read when beta == 0)
    test::GuardedBuffer<T> dx(rows * in, store<T>(std::numeric_limits<Acc>::quiet_NaN()));
    cpu::gemm<T>(false, false, rows, in, out, 1, dyt.data(), out, wt.data(), in, 0, dx.data(), in);
    CHECK(dx.intact());
    exact_product(
        rows, in, out, [&](int64_t i, int64_t p) { return dy[at(i * out + p)]; },
        [&](int64_t p, int64_t j) { return w[at(p * in + j)]; }, exact, magnitude);
    const test::RoundingCheck r = test::check_rounded_once(dx.data(), exact, magnitude, rel(out));
    INFO("dx: " << r.bad << " bad, first " << r.first);
    CHECK(r.bad == 0);
  }
  {  // dx += dy W (beta = 1 into a C of T: linear_backward_into), rounded once after the sum
    const std::vector<double> dx0 = test::rounded_to(test::random_doubles(rows * in, 6), dtype);
    test::GuardedBuffer<T> dx(rows * in);
    for (int64_t i = 0; i < rows * in; ++i) dx.data()[i] = store<T>(static_cast<Acc>(dx0[at(i)]));
    cpu::gemm<T>(false, false, rows, in, out, 1, dyt.data(), out, wt.data(), in, 1, dx.data(), in);
    CHECK(dx.intact());
    exact_product(
        rows, in, out, [&](int64_t i, int64_t p) { return dy[at(i * out + p)]; },
        [&](int64_t p, int64_t j) { return w[at(p * in + j)]; }, exact, magnitude);
    for (int64_t i = 0; i < rows * in; ++i) {
      exact[at(i)] += dx0[at(i)];
      magnitude[at(i)] += std::fabs(dx0[at(i)]);
    }
    const test::RoundingCheck r = test::check_rounded_once(dx.data(), exact, magnitude, rel(out + 1));
    INFO("dx + dy W: " << r.bad << " bad, first " << r.first);
    CHECK(r.bad == 0);
  }
  {  // dW += dy^T x into the accumulator dtype
    test::GuardedBuffer<Acc> dw(out * in);
    for (int64_t i = 0; i < out * in; ++i) dw.data()[i] = static_cast<Acc>(dw0[at(i)]);
    cpu::gemm<T>(true, false, out, in, rows, 1, dyt.data(), out, xt.data(), in, 1, dw.data(), in);
    CHECK(dw.intact());
    exact_product(
        out, in, rows, [&](int64_t i, int64_t p) { return dy[at(p * out + i)]; },
        [&](int64_t p, int64_t j) { return x[at(p * in + j)]; }, exact, magnitude);
    for (int64_t i = 0; i < out * in; ++i) {
      exact[at(i)] += dw0[at(i)];
      magnitude[at(i)] += std::fabs(dw0[at(i)]);
    }
    const test::RoundingCheck r = test::check_rounded_once(dw.data(), exact, magnitude, rel(rows + 1));
    INFO("dW: " << r.bad << " bad, first " << r.first);
    CHECK(r.bad == 0);
  }
}

// |a| |b|^T in double: a [rows, inner], b [cols, inner] (a weight's layout), the scale of the
// summation error of each element of a product.
std::vector<double> abs_products(const std::vector<double>& a, const std::vector<double>& b, int64_t rows, int64_t cols,
                                 int64_t inner) {
  std::vector<double> s(at(rows * cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < cols; ++o) {
      for (int64_t j = 0; j < inner; ++j) s[at(r * cols + o)] += std::fabs(a[at(r * inner + j)] * b[at(o * inner + j)]);
    }
  }
  return s;
}

// The same product of `inner` terms by two paths (a fused epilogue and the plain product, say): on
// the CPU the same bits (one kernel, one summation order). On a GPU cuBLASLt chooses an algorithm
// per epilogue, so the summation order may differ: there each element agrees within one unit in
// the last place of the dtype plus the float summation error 4 sqrt(inner) eps_f32 scale[i] (the
// bound of the parity tests in tests/cuda/).
void check_same_product(const test::OpCase& c, const std::vector<double>& got, const std::vector<double>& expected,
                        const std::vector<double>& scale, int64_t inner) {
  if (c.device.is_cpu()) {
    CHECK(got == expected);
    return;
  }
  REQUIRE(got.size() == expected.size());
  const double float_sum = 4.0 * std::sqrt(static_cast<double>(inner)) * 0x1p-23;
  int64_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = test::unit_roundoff(c.dtype) * std::fabs(expected[i]) + float_sum * scale[i];
    if (std::fabs(got[i] - expected[i]) > bound && bad++ == 0) {
      UNSCOPED_INFO("element " << i << ": " << got[i] << " against " << expected[i] << " +- " << bound);
    }
  }
  CHECK(bad == 0);
}

}  // namespace

DRAGOMAN_CPU_TEST_CASE("cpu::gemm_bias and cpu::gemm round once per stored element, for every dtype", "[kernels]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      test::with_storage_type(c.dtype, [&](auto zero) {
        using T = decltype(zero);
        // Each awkward size once as each of the three dimensions (513 and 1025 cross the widening
        // blocks of bf16/f16, kGemmBlock = 512, in m, n and k).
        for (const int64_t s : test::awkward_sizes()) {
          check_linear_kernels<T>(c.dtype, s, 7, 33);
          check_linear_kernels<T>(c.dtype, 33, s, 7);
          check_linear_kernels<T>(c.dtype, 7, 33, s);
        }
      });
    }
  }
}

TEST_CASE("ops::linear_relu equals ops::relu of ops::linear bit for bit, with and without a bias", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const Tensor x = test::from_doubles(test::random_doubles(7 * 33, 5), {7, 33}, c.dtype, c.device);
      const Tensor w = test::from_doubles(test::random_doubles(31 * 33, 6), {31, 33}, c.dtype, c.device);
      const Tensor b = test::from_doubles(test::random_doubles(31, 7), {31}, c.dtype, c.device);
      const std::vector<double> scale = abs_products(test::to_doubles(x), test::to_doubles(w), 7, 31, 33);
      for (const Tensor& bias : {b, Tensor()}) {
        const std::vector<double> got = test::to_doubles(ops::linear_relu(x, w, bias));
        const std::vector<double> expected = test::to_doubles(ops::relu(ops::linear(x, w, bias)));
        check_same_product(c, got, expected, scale, 33);
        CHECK(std::count(got.begin(), got.end(), 0.0) > 0);  // the ReLU cut something
        CHECK(std::count(got.begin(), got.end(), 0.0) < static_cast<std::ptrdiff_t>(got.size()));
      }
    }
  }
}

TEST_CASE("ops::linear and linear_backward take accumulator-dtype parameter gradients", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const DType acc = accumulator_dtype(c.dtype);
      const Tensor x = test::from_doubles(test::random_doubles(2 * 3 * 4, 1), {2, 3, 4}, c.dtype, c.device);
      const Tensor w = test::from_doubles(test::random_doubles(5 * 4, 2), {5, 4}, c.dtype, c.device);
      const Tensor b = test::from_doubles(test::random_doubles(5, 3), {5}, c.dtype, c.device);
      const Tensor dy = test::from_doubles(test::random_doubles(2 * 3 * 5, 4), {2, 3, 5}, c.dtype, c.device);
      const Tensor y = ops::linear(x, w, b);
      CHECK(y.dtype() == c.dtype);
      CHECK(y.shape() == Shape{2, 3, 5});
      Tensor dw = Tensor::zeros({5, 4}, acc, c.device), db = Tensor::zeros({5}, acc, c.device);
      const Tensor dx = ops::linear_backward(x, w, dy, dw, db);
      CHECK(dx.dtype() == c.dtype);
      // dbias = the column sums of dy (6 rows: exact in the accumulator for these inputs' scale).
      const std::vector<double> dyv = test::to_doubles(dy), dbv = test::to_doubles(db);
      for (int64_t o = 0; o < 5; ++o) {
        double sum = 0;
        for (int64_t r = 0; r < 6; ++r) sum += dyv[at(r * 5 + o)];
        CHECK(dbv[at(o)] == Approx(sum).margin(1e-6));
      }
      if (c.dtype != acc) {
        Tensor dw_low = Tensor::zeros({5, 4}, c.dtype, c.device), no_dbias;
        CHECK_THROWS_WITH(ops::linear_backward(x, w, dy, dw_low, no_dbias), Catch::Contains("accumulator dtype"));
      }
    }
  }
}

TEST_CASE("ops::linear_backward_into assigns an undefined dx and adds to a defined one", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const DType acc = accumulator_dtype(c.dtype);
      const Tensor x = test::from_doubles(test::random_doubles(2 * 3 * 4, 1), {2, 3, 4}, c.dtype, c.device);
      const Tensor w = test::from_doubles(test::random_doubles(5 * 4, 2), {5, 4}, c.dtype, c.device);
      const Tensor dy = test::from_doubles(test::random_doubles(2 * 3 * 5, 4), {2, 3, 5}, c.dtype, c.device);
      const std::vector<double> dx0 = test::rounded_to(test::random_doubles(2 * 3 * 4, 5), c.dtype);
      Tensor dw = Tensor::zeros({5, 4}, acc, c.device), db = Tensor::zeros({5}, acc, c.device);
      Tensor dw_into = dw.clone(), db_into = db.clone();
      const Tensor dx = ops::linear_backward(x, w, dy, dw, db);

      Tensor assigned;
      ops::linear_backward_into(x, w, dy, dw_into, db_into, assigned);
      CHECK(test::to_doubles(assigned) == test::to_doubles(dx));  // the same product
      CHECK(test::to_doubles(dw_into) == test::to_doubles(dw));
      CHECK(test::to_doubles(db_into) == test::to_doubles(db));

      // A defined dx: dx0 + dy W, within a rounding of the sum (bf16/f16: rounded once, so it may
      // differ from the two-step sum by one ulp of the dtype).
      Tensor summed = test::from_doubles(dx0, {2, 3, 4}, c.dtype, c.device);
      ops::linear_backward_into(x, w, dy, dw_into, db_into, summed);
      const std::vector<double> got = test::to_doubles(summed), product = test::to_doubles(dx);
      const double unit = test::unit_roundoff(c.dtype);
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double want = dx0[i] + product[i];
        CHECK(std::fabs(got[i] - want) <= 4 * unit * (std::fabs(dx0[i]) + std::fabs(product[i])) + 1e-300);
      }
      CHECK(test::to_doubles(dw_into) != test::to_doubles(dw));  // the weight gradient accumulated again

      Tensor wrong_shape = Tensor::zeros({2, 4, 3}, c.dtype, c.device);
      CHECK_THROWS_WITH(ops::linear_backward_into(x, w, dy, dw_into, db_into, wrong_shape), Catch::Contains("dx"));
      Tensor wrong_dtype = Tensor::zeros({2, 3, 4}, c.dtype == DType::kF64 ? DType::kF32 : DType::kF64, c.device);
      CHECK_THROWS_WITH(ops::linear_backward_into(x, w, dy, dw_into, db_into, wrong_dtype), Catch::Contains("dx"));
    }
  }
}

TEST_CASE("ops::linear_relu_masked and linear_backward_relu give linear_relu and relu_backward of dx", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const DType acc = accumulator_dtype(c.dtype);
      const Tensor x = test::from_doubles(test::random_doubles(7 * 33, 11), {7, 33}, c.dtype, c.device);
      const Tensor w1 = test::from_doubles(test::random_doubles(31 * 33, 12), {31, 33}, c.dtype, c.device);
      const Tensor b1 = test::from_doubles(test::random_doubles(31, 13), {31}, c.dtype, c.device);
      const Tensor w2 = test::from_doubles(test::random_doubles(5 * 31, 14), {5, 31}, c.dtype, c.device);
      const Tensor dy = test::from_doubles(test::random_doubles(7 * 5, 15), {7, 5}, c.dtype, c.device);
      Tensor mask = Tensor::zeros({1}, DType::kU8);  // reset: the CPU writes no mask
      const Tensor h = ops::linear_relu_masked(x, w1, b1, mask);
      if (c.device.is_cpu()) CHECK_FALSE(mask.defined());
      check_same_product(c, test::to_doubles(h), test::to_doubles(ops::linear_relu(x, w1, b1)),
                         abs_products(test::to_doubles(x), test::to_doubles(w1), 7, 31, 33), 33);

      Tensor dw = Tensor::zeros({5, 31}, acc, c.device), db = Tensor::zeros({5}, acc, c.device);
      Tensor dw2 = dw.clone(), db2 = db.clone();
      const Tensor dh = ops::linear_backward_relu(h, w2, dy, dw, db, mask);
      const Tensor expected = ops::relu_backward(h, ops::linear_backward(h, w2, dy, dw2, db2));
      const std::vector<double> got = test::to_doubles(dh), hv = test::to_doubles(h);
      // dh = dy w2 ([7, 5] by [5, 31]): the scale of element (r, i) is sum_o |dy[r, o] w2[o, i]|.
      std::vector<double> w2_columns(at(31 * 5));  // w2 transposed, [31, 5]
      const std::vector<double> w2v = test::to_doubles(w2);
      for (int64_t o = 0; o < 5; ++o) {
        for (int64_t i = 0; i < 31; ++i) w2_columns[at(i * 5 + o)] = w2v[at(o * 31 + i)];
      }
      check_same_product(c, got, test::to_doubles(expected), abs_products(test::to_doubles(dy), w2_columns, 7, 31, 5),
                         5);
      CHECK(test::to_doubles(dw) == test::to_doubles(dw2));
      CHECK(test::to_doubles(db) == test::to_doubles(db2));
      std::ptrdiff_t cut = 0;  // the ReLU's gradient cut where h is 0, and only there
      for (std::size_t i = 0; i < got.size(); ++i) cut += hv[i] == 0;
      CHECK(cut > 0);
      CHECK(std::count(got.begin(), got.end(), 0.0) == cut);

      // A mask that is not linear_relu_masked's for this layer is refused.
      const Tensor wrong = Tensor::zeros({3}, DType::kU8, c.device);
      CHECK_THROWS_WITH(ops::linear_backward_relu(h, w2, dy, dw, db, wrong), Catch::Contains("relu_mask"));
    }
  }
}

// ---- gemm ---------------------------------------------------------------------------------------

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::gemm matches a naive product for every transpose combination", "[kernels]", float,
                                double) {
  using T = TestType;
  const int64_t m = 5, n = 4, k = 3;
  const T alpha = T(1.5), beta = T(0.5);
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      INFO("trans_a " << ta << ", trans_b " << tb);
      // Stored operands with row strides wider than their rows; the extra columns are never read.
      const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, lda = a_cols + 3;
      const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n, ldb = b_cols + 2;
      const int64_t ldc = n + 5;
      std::vector<T> a = random_values<T>(a_rows * lda, 1), b = random_values<T>(b_rows * ldb, 2);
      for (int64_t i = 0; i < a_rows; ++i) {
        for (int64_t j = a_cols; j < lda; ++j) a[at(i * lda + j)] = std::numeric_limits<T>::quiet_NaN();
      }
      for (int64_t i = 0; i < b_rows; ++i) {
        for (int64_t j = b_cols; j < ldb; ++j) b[at(i * ldb + j)] = std::numeric_limits<T>::quiet_NaN();
      }
      const std::vector<T> c0 = random_values<T>(m * ldc, 3);
      std::vector<T> c = c0;
      cpu::gemm<T>(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t p = 0; p < k; ++p) {
            const double aip = ta ? a[at(p * lda + i)] : a[at(i * lda + p)];
            const double bpj = tb ? b[at(j * ldb + p)] : b[at(p * ldb + j)];
            dot += aip * bpj;
          }
          const double expected = static_cast<double>(alpha) * dot + static_cast<double>(beta) * c0[at(i * ldc + j)];
          CHECK(c[at(i * ldc + j)] == Approx(expected).margin(tolerance<T>()));
        }
        for (int64_t j = n; j < ldc; ++j) CHECK(c[at(i * ldc + j)] == c0[at(i * ldc + j)]);  // padding untouched
      }
    }
  }
}

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::gemm with k == 0 scales C by beta", "[kernels]", float, double) {
  using T = TestType;
  const int64_t m = 3, n = 2, ldc = 4;
  const std::vector<T> c0 = random_values<T>(m * ldc, 4);
  const T dummy[1] = {T(1)};
  for (const T beta : {T(0), T(0.5), T(1)}) {
    INFO("beta " << beta);
    std::vector<T> c = c0;
    cpu::gemm<T>(false, true, m, n, 0, T(2), dummy, 1, dummy, 1, beta, c.data(), ldc);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const T expected = j < n ? beta * c0[at(i * ldc + j)] : c0[at(i * ldc + j)];
        CHECK(c[at(i * ldc + j)] == expected);
      }
    }
  }
}

DRAGOMAN_CPU_TEST_CASE("cpu::gemm_strided_batched computes each product of the batch", "[kernels]") {
  const int64_t m = 2, n = 3, k = 4, batch = 3;
  const int64_t stride_a = m * k + 1, stride_b = k * n + 2, stride_c = m * n + 3;
  const std::vector<double> a = random_values<double>(batch * stride_a, 5),
                            b = random_values<double>(batch * stride_b, 6);
  std::vector<double> c(at(batch * stride_c), -7.0);
  cpu::gemm_strided_batched<double>(false, false, m, n, k, 1.0, a.data(), k, stride_a, b.data(), n, stride_b, 0.0,
                                    c.data(), n, stride_c, batch);
  for (int64_t x = 0; x < batch; ++x) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t p = 0; p < k; ++p) dot += a[at(x * stride_a + i * k + p)] * b[at(x * stride_b + p * n + j)];
        CHECK(c[at(x * stride_c + i * n + j)] == Approx(dot).margin(1e-12));
      }
    }
    for (int64_t e = m * n; e < stride_c; ++e) CHECK(c[at(x * stride_c + e)] == -7.0);
  }
}

DRAGOMAN_CPU_TEST_CASE("ops::linear gradients match finite differences", "[ops]") {
  Tensor x = random64({2, 3, 4}, 1), w = random64({5, 4}, 2), b = random64({5}, 3);  // perturbed by check_gradient
  const Tensor r = random64({2, 3, 5}, 4);
  const auto loss = [&] { return dot(ops::linear(x, w, b), r); };
  Tensor dw = zeros64({5, 4}), db = zeros64({5});
  const Tensor dx = ops::linear_backward(x, w, r, dw, db);
  check_gradient("x", loss, x, dx);
  check_gradient("weight", loss, w, dw);
  check_gradient("bias", loss, b, db);

  SECTION("without a bias") {
    const auto loss_nb = [&] { return dot(ops::linear(x, w, Tensor()), r); };
    dw.fill_zero();
    Tensor no_dbias;
    const Tensor dx_nb = ops::linear_backward(x, w, r, dw, no_dbias);
    check_gradient("x", loss_nb, x, dx_nb);
    check_gradient("weight", loss_nb, w, dw);
    CHECK_FALSE(ops::linear_backward(x, w, r, dw, no_dbias, /*need_dx=*/false).defined());
  }
}

DRAGOMAN_CPU_TEST_CASE("ops::matmul equals the naive product for every transpose flag", "[ops]") {
  const Tensor a = random64({3, 4}, 5), b = random64({4, 2}, 6);
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> expected(6, 0.0);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int p = 0; p < 4; ++p) expected[static_cast<std::size_t>(i * 2 + j)] += av[i * 4 + p] * bv[p * 2 + j];
    }
  }
  const Tensor at = a.transpose(0, 1).contiguous(), bt = b.transpose(0, 1).contiguous();
  for (const Tensor& c : {ops::matmul(a, b), ops::matmul(at, b, true, false), ops::matmul(a, bt, false, true),
                          ops::matmul(at, bt, true, true)}) {
    REQUIRE(c.shape() == Shape{3, 2});
    const std::vector<double> cv = c.to_vector<double>();
    for (std::size_t i = 0; i < cv.size(); ++i) CHECK(cv[i] == Approx(expected[i]).margin(1e-14));
  }
}

}  // namespace dragoman
