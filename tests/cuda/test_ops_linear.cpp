// cuBLASLt GEMMs (kernels/gemm.h) and the linear ops on a GPU against their CPU specs, for f32,
// bf16 and f16, awkward sizes (1, 7, 31, 32, 33, 255, 513, 1025 for M, N and K), all four transposes,
// C of T and C of f32 (beta = 1, the weight gradient), strided batches, k = 0, and a misaligned bias
// (the epilogue's fallback); linear_backward_into's dx, added to by the GEMM (beta = 1); the weight
// gradient with the bias gradient in one product (cuBLASLt's BGRADB epilogue), and linear_backward
// with it and with the column-sum kernel; the feed-forward ReLU's mask from fc1's product and its
// gradient in fc2's (RELU_AUX_BIAS, DRELU), with the epilogues and without.
//
// Tolerance: cuBLASLt and OpenBLAS both sum in float but in different orders, so an element may differ
// by a float summation error of its dot product, bounded here by 4 sqrt(K) eps_f32 S (S = the sum of
// |products|, computed on the CPU), plus one unit in the last place of the stored type (the two sums may
// round to neighbouring values) and the rounding of beta * C. A wrong layout or transpose is off by
// O(S / sqrt(K)), far outside. Elements outside C (row padding with ldc > N, a tail after C, gaps
// between batches) are compared bit for bit with what was there before. Each product is run twice:
// the same bits both times (the cached algorithm).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/tensor.h"
#include "device/cuda/context.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "op_parity.h"
#include "ops/linear.h"
#include "parity_testing.h"

namespace dragoman {
namespace {

using parity::kGpu;

// op(A) as an f32 CPU tensor of absolute values (for the error bound S = |op(A)| |op(B)|).
std::vector<float> abs_values(const Tensor& t) {
  std::vector<float> v = t.to(DType::kF32).to_vector<float>();
  for (float& x : v) x = std::abs(x);
  return v;
}

// S = |op(A)| |op(B)| [m, n] in float, the scale of the summation error of each element.
std::vector<float> abs_products(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const Tensor& a,
                                const Tensor& b) {
  std::vector<float> s(static_cast<std::size_t>(m * n), 0.0f);
  if (k == 0) return s;
  const std::vector<float> abs_a = abs_values(a), abs_b = abs_values(b);
  cpu::gemm<float, float>(ta, tb, m, n, k, 1.0f, abs_a.data(), a.dim(1), abs_b.data(), b.dim(1), 0.0f, s.data(), n);
  return s;
}

// The bytes of a host tensor, for the bit-for-bit checks.
std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  const auto* p = static_cast<const unsigned char*>(host.raw_data());
  return {p, p + host.nbytes()};
}

// Runs cuda::gemm<T, C> against cpu::gemm<T, C> on one problem; C has row padding (ldc = n + 3)
// and a tail of 16 elements, all random (they are the sentinels).
template <typename T, typename C>
void check_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, float beta,
                std::uint32_t seed) {
  INFO("m=" << m << " n=" << n << " k=" << k << " trans_a=" << ta << " trans_b=" << tb
            << " T=" << dtype_name(dtype_of<T>()) << " C=" << dtype_name(dtype_of<C>()) << " beta=" << beta);
  const DType dc = dtype_of<C>();
  const Tensor a = parity::random_tensor(ta ? Shape{k, m} : Shape{m, k}, dtype_of<T>(), seed);
  const Tensor b = parity::random_tensor(tb ? Shape{n, k} : Shape{k, n}, dtype_of<T>(), seed + 1);
  const std::int64_t ldc = n + 3, c_elems = m * ldc + 16;
  const Tensor c0 = parity::random_tensor({c_elems}, dc, seed + 2);
  Tensor expected = c0.clone();
  cpu::gemm<T, C>(ta, tb, m, n, k, alpha, a.data<T>(), a.dim(1), b.data<T>(), b.dim(1), beta, expected.data<C>(), ldc);

  const Tensor ga = a.to(kGpu), gb = b.to(kGpu);
  const auto run = [&] {
    Tensor gc = c0.to(kGpu);
    cuda::gemm<T, C>(ta, tb, m, n, k, alpha, ga.data<T>(), a.dim(1), gb.data<T>(), b.dim(1), beta, gc.data<C>(), ldc,
                     0);
    return gc;
  };
  const Tensor gc = run();
  const std::vector<unsigned char> got_bytes = bytes_of(gc), want_bytes = bytes_of(c0);
  CHECK(bytes_of(run()) == got_bytes);  // the same algorithm, the same bits

  const std::vector<double> got = parity::as_doubles(gc), ref = parity::as_doubles(expected),
                            before = parity::as_doubles(c0);
  const std::vector<float> s = abs_products(ta, tb, m, n, k, a, b);
  const double sqrt_k = std::sqrt(static_cast<double>(k));
  const auto inside = [&](std::int64_t i) { return i / ldc < m && i % ldc < n; };
  const auto tolerance = [&](std::size_t i) {
    const auto row = static_cast<std::int64_t>(i) / ldc, col = static_cast<std::int64_t>(i) % ldc;
    if (!inside(static_cast<std::int64_t>(i))) return 0.0;
    return parity::ulp(ref[i], dc) + 4 * sqrt_k * parity::kEpsF32 * std::abs(alpha) * s[row * n + col] +
           2 * parity::kEpsF32 * std::abs(beta * before[i]);
  };
  test::check_close(got, ref, tolerance, "gemm");
  // Row padding and tail bit for bit (a zero tolerance would let -0 pass for +0).
  const std::size_t size = sizeof(C);
  std::int64_t written = 0;
  for (std::int64_t i = 0; i < c_elems; ++i) {
    if (!inside(i) && std::memcmp(got_bytes.data() + i * size, want_bytes.data() + i * size, size) != 0) ++written;
  }
  CHECK(written == 0);
}

struct Dims {
  std::int64_t m, n, k;
};

// Every size of the sweep appears as M, N and K.
const Dims kShapes[] = {{1, 1, 1},      {7, 31, 33},    {32, 33, 7},     {255, 1, 513},  {33, 1025, 32},
                        {513, 255, 31}, {1025, 7, 255}, {31, 513, 1025}, {1, 1025, 513}, {32, 32, 32}};

}  // namespace

TEST_CASE("cuda::gemm matches cpu::gemm (f32, bf16, f16; all transposes; f32 C)", "[cuda][gemm]") {
  const cuda::DeviceGuard guard(0);
  std::uint32_t seed = 100;
  for (const Dims& d : kShapes) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        check_gemm<float, float>(ta, tb, d.m, d.n, d.k, 1.0f, 0.0f, seed += 3);
        check_gemm<bf16, bf16>(ta, tb, d.m, d.n, d.k, 1.0f, 0.0f, seed += 3);
        check_gemm<f16, f16>(ta, tb, d.m, d.n, d.k, 1.0f, 0.0f, seed += 3);
        check_gemm<float, float>(ta, tb, d.m, d.n, d.k, 0.5f, 1.0f, seed += 3);
        check_gemm<bf16, bf16>(ta, tb, d.m, d.n, d.k, 0.5f, 1.0f, seed += 3);
        check_gemm<f16, f16>(ta, tb, d.m, d.n, d.k, 1.0f, 1.0f, seed += 3);     // dx += dy W (linear_backward_into)
        check_gemm<bf16, float>(ta, tb, d.m, d.n, d.k, 1.0f, 1.0f, seed += 3);  // dW += dy^T x
        check_gemm<f16, float>(ta, tb, d.m, d.n, d.k, 1.0f, 1.0f, seed += 3);
      }
    }
  }
}

namespace {

// cuda::gemm_bias_grad<T> (dW += dy^T x and db = the column sums of dy, in one product) against
// cpu::gemm and cpu::bias_backward: dy [k, m], x [k, n], dW [m, n] of acc_t<T> starting at random
// values. Returns whether cuBLASLt ran it; when it did not, dW and the bias scratch are unchanged.
template <typename T>
bool check_gemm_bias_grad(std::int64_t m, std::int64_t n, std::int64_t k, std::uint32_t seed) {
  using Acc = acc_t<T>;
  INFO("m=" << m << " n=" << n << " k=" << k << " T=" << dtype_name(dtype_of<T>()));
  const DType dt = dtype_of<T>(), da = dtype_of<Acc>();
  const Tensor dy = parity::random_tensor({k, m}, dt, seed), x = parity::random_tensor({k, n}, dt, seed + 1);
  const Tensor dw0 = parity::random_tensor({m, n}, da, seed + 2), db0 = parity::random_tensor({m}, da, seed + 3);
  Tensor dw_ref = dw0.clone(), db_ref = Tensor::zeros({m}, da);
  cpu::gemm<T, Acc>(true, false, m, n, k, 1, dy.data<T>(), m, x.data<T>(), n, 1, dw_ref.data<Acc>(), n);
  cpu::bias_backward<T>(dy.data<T>(), db_ref.data<Acc>(), k, m);

  const Tensor gdy = dy.to(kGpu), gx = x.to(kGpu);
  const auto run = [&](Tensor& gdw, Tensor& gdb) {
    gdw = dw0.to(kGpu);
    gdb = db0.to(kGpu);  // random: the epilogue must write every element
    return cuda::gemm_bias_grad<T>(m, n, k, gdy.data<T>(), m, gx.data<T>(), n, gdw.data<Acc>(), n, gdb.data<Acc>(), 0);
  };
  Tensor gdw, gdb, gdw2, gdb2;
  const bool ran = run(gdw, gdb);
  CHECK(run(gdw2, gdb2) == ran);
  if (!ran) {  // nothing written
    CHECK(bytes_of(gdw) == bytes_of(dw0));
    CHECK(bytes_of(gdb) == bytes_of(db0));
    return false;
  }
  CHECK(bytes_of(gdw2) == bytes_of(gdw));  // the same algorithm, the same bits
  CHECK(bytes_of(gdb2) == bytes_of(gdb));
  const double sqrt_k = std::sqrt(static_cast<double>(k)), eps = parity::kEpsF32;
  const std::vector<float> s = abs_products(true, false, m, n, k, dy, x);
  const std::vector<double> w = parity::as_doubles(gdw), w_ref = parity::as_doubles(dw_ref),
                            w_before = parity::as_doubles(dw0);
  test::check_close(
      w, w_ref,
      [&](std::size_t i) {
        return parity::ulp(w_ref[i], da) + 4 * sqrt_k * eps * s[i] + 2 * eps * std::abs(w_before[i]);
      },
      "gemm_bias_grad dW");
  // db[i] sums k elements of at most 1 in magnitude: the summation error is within 4 sqrt(k) eps k.
  const std::vector<double> b = parity::as_doubles(gdb), b_ref = parity::as_doubles(db_ref);
  test::check_close(
      b, b_ref, [&](std::size_t i) { return parity::ulp(b_ref[i], da) + 4 * sqrt_k * eps * double(k); },
      "gemm_bias_grad db");
  return true;
}

}  // namespace

TEST_CASE("cuda::gemm_bias_grad: the weight gradient and the bias gradient in one product", "[cuda][gemm]") {
  const cuda::DeviceGuard guard(0);
  std::uint32_t seed = 700;
  // The sweep's shapes (those with m or n not a multiple of 8 are not taken: nothing written), and
  // layer-like ones (multiples of 8) with awkward numbers of rows.
  const Dims kLayerShapes[] = {{8, 8, 1}, {8, 24, 7}, {64, 40, 1025}, {1024, 16, 255}, {16, 1032, 33}, {40, 8, 513}};
  for (const Dims& d : kShapes) {
    check_gemm_bias_grad<float>(d.m, d.n, d.k, seed += 4);
    check_gemm_bias_grad<bf16>(d.m, d.n, d.k, seed += 4);
    check_gemm_bias_grad<f16>(d.m, d.n, d.k, seed += 4);
  }
  for (const Dims& d : kLayerShapes) {
    check_gemm_bias_grad<float>(d.m, d.n, d.k, seed += 4);
    check_gemm_bias_grad<bf16>(d.m, d.n, d.k, seed += 4);
    check_gemm_bias_grad<f16>(d.m, d.n, d.k, seed += 4);
  }
  CHECK_FALSE(check_gemm_bias_grad<bf16>(1, 1024, 2048, seed += 4));  // out of 1: the kernels
  // A big model's shapes (out 1,024 or 4,096 columns of dy, 2,048 rows) in the training precisions:
  // the reason for the epilogue, so cuBLASLt must take them (on the GPUs we target) or the bias
  // gradients read dy a second time. (f32 training is not the speed path: whether it is taken is
  // reported, not required.)
  CHECK(check_gemm_bias_grad<bf16>(1024, 1024, 2048, seed += 4));
  CHECK(check_gemm_bias_grad<bf16>(4096, 1024, 2048, seed += 4));
  CHECK(check_gemm_bias_grad<bf16>(1024, 4096, 2048, seed += 4));
  CHECK(check_gemm_bias_grad<f16>(1024, 1024, 2048, seed += 4));
  const bool f32_taken = check_gemm_bias_grad<float>(1024, 1024, 2048, seed += 4);
  WARN("f32 1024 x 1024 x 2048 with BGRADB: " << (f32_taken ? "taken" : "not taken (the kernels)"));
  // k = 0 and a misaligned bias gradient: not taken, nothing written.
  CHECK_FALSE(check_gemm_bias_grad<bf16>(33, 31, 0, seed += 4));
  Tensor gdw = Tensor::zeros({4, 4}, DType::kF32, kGpu), gdb = Tensor::zeros({5}, DType::kF32, kGpu);
  const Tensor g = Tensor::zeros({8, 4}, DType::kBF16, kGpu);
  CHECK_FALSE(cuda::gemm_bias_grad<bf16>(4, 4, 8, g.data<bf16>(), 4, g.data<bf16>(), 4, gdw.data<float>(), 4,
                                         gdb.data<float>() + 1, 0));
}

TEST_CASE("cuda::gemm with k = 0 scales C by beta (zeros for beta = 0)", "[cuda][gemm]") {
  const cuda::DeviceGuard guard(0);
  check_gemm<float, float>(false, false, 7, 33, 0, 1.0f, 0.0f, 1);
  check_gemm<bf16, bf16>(false, true, 7, 33, 0, 1.0f, 0.5f, 2);
  check_gemm<f16, float>(true, false, 31, 1, 0, 1.0f, 1.0f, 3);
}

TEST_CASE("cuda::gemm_strided_batched matches the CPU, gaps between batches untouched", "[cuda][gemm]") {
  const cuda::DeviceGuard guard(0);
  const auto check = [](auto zero, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k) {
    using T = decltype(zero);
    INFO("m=" << m << " n=" << n << " k=" << k << " trans_a=" << ta << " trans_b=" << tb
              << " T=" << dtype_name(dtype_of<T>()));
    const std::int64_t batch = 3, sa = m * k + 5, sb = k * n + 7, sc = m * n + 9;
    const Tensor a = parity::random_tensor({batch * sa}, dtype_of<T>(), 11);
    const Tensor b = parity::random_tensor({batch * sb}, dtype_of<T>(), 12);
    const Tensor c0 = parity::random_tensor({batch * sc}, dtype_of<T>(), 13);
    const std::int64_t lda = ta ? m : k, ldb = tb ? k : n;
    Tensor expected = c0.clone();
    cpu::gemm_strided_batched<T>(ta, tb, m, n, k, 1.0f, a.data<T>(), lda, sa, b.data<T>(), ldb, sb, 0.5f,
                                 expected.data<T>(), n, sc, batch);
    const Tensor ga = a.to(kGpu), gb = b.to(kGpu);
    Tensor gc = c0.to(kGpu);
    cuda::gemm_strided_batched<T>(ta, tb, m, n, k, 1.0f, ga.data<T>(), lda, sa, gb.data<T>(), ldb, sb, 0.5f,
                                  gc.data<T>(), n, sc, batch, 0);
    const std::vector<double> got = parity::as_doubles(gc), ref = parity::as_doubles(expected),
                              before = parity::as_doubles(c0);
    // |a|, |b| <= 1: S <= k, a loose but layout-sensitive bound; gaps must be unchanged.
    const auto tolerance = [&](std::size_t i) {
      if (static_cast<std::int64_t>(i) % sc >= m * n) return 0.0;
      return parity::ulp(ref[i], dtype_of<T>()) + 4 * std::sqrt(double(k)) * parity::kEpsF32 * double(k) +
             parity::kEpsF32 * std::abs(before[i]);
    };
    test::check_close(got, ref, tolerance, "gemm_strided_batched");
  };
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      check(float(), ta, tb, 33, 7, 31);
      check(bf16(), ta, tb, 1, 255, 32);
      check(f16(), ta, tb, 31, 33, 1025);
    }
  }
}

namespace {

// ops::linear and ops::linear_backward on the GPU against the CPU ops, with the bias at offset
// `bias_offset` elements in its buffer (1: not 16-byte aligned, cuBLASLt's epilogue is skipped).
template <typename T>
void check_linear(std::int64_t rows, std::int64_t in, std::int64_t out, bool with_bias, std::int64_t bias_offset) {
  INFO("rows=" << rows << " in=" << in << " out=" << out << " bias=" << with_bias << " offset=" << bias_offset
               << " T=" << dtype_name(dtype_of<T>()));
  const DType dt = dtype_of<T>();
  const Tensor x = parity::random_tensor({rows, in}, dt, 21), w = parity::random_tensor({out, in}, dt, 22);
  const Tensor bias_buffer = parity::random_tensor({out + 1}, dt, 23), gbias_buffer = bias_buffer.to(kGpu);
  const Tensor bias = with_bias ? bias_buffer.narrow(0, bias_offset, out) : Tensor();
  const Tensor gbias = with_bias ? gbias_buffer.narrow(0, bias_offset, out) : Tensor();  // alignment kept
  const Tensor gx = x.to(kGpu), gw = w.to(kGpu);
  const double eps = parity::kEpsF32;

  // Forward: |x|, |w| <= 1, so S <= in.
  const std::vector<double> y = parity::as_doubles(ops::linear(gx, gw, gbias)),
                            y_ref = parity::as_doubles(ops::linear(x, w, bias));
  test::check_close(
      y, y_ref, [&](std::size_t i) { return parity::ulp(y_ref[i], dt) + 4 * std::sqrt(double(in)) * eps * in; },
      "linear");
  // linear_relu (the RELU_BIAS / RELU epilogue, or the ReLU kernel after the fallback) against the
  // CPU's: within the same bound (max(., 0) only shrinks differences).
  const std::vector<double> r = parity::as_doubles(ops::linear_relu(gx, gw, gbias)),
                            r_ref = parity::as_doubles(ops::linear_relu(x, w, bias));
  test::check_close(
      r, r_ref, [&](std::size_t i) { return parity::ulp(r_ref[i], dt) + 4 * std::sqrt(double(in)) * eps * in; },
      "linear_relu");

  // Backward: dweight and dbias start from random values and accumulate.
  const Tensor dy = parity::random_tensor({rows, out}, dt, 24), gdy = dy.to(kGpu);
  Tensor dw = parity::random_tensor({out, in}, DType::kF32, 25), db = parity::random_tensor({out}, DType::kF32, 26);
  Tensor gdw = dw.to(kGpu), gdb = db.to(kGpu);
  Tensor gdb_arg = with_bias ? gdb : Tensor(), db_arg = with_bias ? db : Tensor();
  const std::vector<double> dx = parity::as_doubles(ops::linear_backward(gx, gw, gdy, gdw, gdb_arg)),
                            dx_ref = parity::as_doubles(ops::linear_backward(x, w, dy, dw, db_arg));
  test::check_close(
      dx, dx_ref, [&](std::size_t i) { return parity::ulp(dx_ref[i], dt) + 4 * std::sqrt(double(out)) * eps * out; },
      "linear_backward dx");
  // The f32 gradients: sums over `rows` products (or elements) of at most 1, plus the start value.
  const auto check_accumulated = [&](const Tensor& got_tensor, const Tensor& ref_tensor, const char* what) {
    const std::vector<double> got = parity::as_doubles(got_tensor), ref = parity::as_doubles(ref_tensor);
    const double bound = 4 * std::sqrt(double(rows)) * eps * (rows + 1);
    test::check_close(
        got, ref, [&](std::size_t i) { return parity::ulp(ref[i], DType::kF32) + bound; }, what);
  };
  check_accumulated(gdw, dw, "linear_backward dweight");
  if (with_bias) check_accumulated(gdb, db, "linear_backward dbias");

  // linear_backward_into: dx starts at random values and the product is added to it by the GEMM
  // (beta = 1, rounded once on both sides); an undefined dx is assigned linear_backward's dx.
  const Tensor dx0 = parity::random_tensor({rows, in}, dt, 27);
  Tensor gdx_sum = dx0.to(kGpu), dx_sum = dx0.clone(), gdx_new, dx_new;
  Tensor dw2 = Tensor::zeros({out, in}, DType::kF32), gdw2 = dw2.to(kGpu), no_dbias;
  ops::linear_backward_into(gx, gw, gdy, gdw2, no_dbias, gdx_sum);
  ops::linear_backward_into(x, w, dy, dw2, no_dbias, dx_sum);
  const std::vector<double> before = parity::as_doubles(dx0), sum = parity::as_doubles(gdx_sum),
                            sum_ref = parity::as_doubles(dx_sum);
  test::check_close(
      sum, sum_ref,
      [&](std::size_t i) {
        return parity::ulp(sum_ref[i], dt) + 4 * std::sqrt(double(out)) * eps * out + 2 * eps * std::abs(before[i]);
      },
      "linear_backward_into dx + dy W");
  ops::linear_backward_into(gx, gw, gdy, gdw2, no_dbias, gdx_new);
  ops::linear_backward_into(x, w, dy, dw2, no_dbias, dx_new);
  CHECK(bytes_of(gdx_new) ==
        bytes_of(ops::linear_backward(gx, gw, gdy, gdw2, no_dbias)));  // assigned: the same product
  test::check_close(
      parity::as_doubles(gdx_new), parity::as_doubles(dx_new),
      [&](std::size_t i) { return parity::ulp(dx_ref[i], dt) + 4 * std::sqrt(double(out)) * eps * out; },
      "linear_backward_into assigned dx");
}

}  // namespace

TEST_CASE("ops::linear and linear_backward on a GPU match the CPU", "[cuda][linear]") {
  const Dims kLinear[] = {{1, 7, 33}, {33, 32, 31}, {255, 513, 7}, {1025, 33, 255}, {7, 1025, 513}};  // rows, in, out
  // The bias gradient from the weight gradient's product (automatic) and from the column-sum kernel.
  for (const cuda::GradEpilogues kernels : {cuda::GradEpilogues::automatic, cuda::GradEpilogues::off}) {
    cuda::set_grad_epilogues(kernels);
    INFO("bias gradient kernels: " << (kernels == cuda::GradEpilogues::off ? "kernel" : "automatic"));
    for (const Dims& d : kLinear) {
      for (const std::int64_t offset : {std::int64_t{0}, std::int64_t{1}}) {
        check_linear<float>(d.m, d.n, d.k, true, offset);
        check_linear<bf16>(d.m, d.n, d.k, true, offset);
        check_linear<f16>(d.m, d.n, d.k, true, offset);
      }
      check_linear<bf16>(d.m, d.n, d.k, false, 0);
    }
  }
  cuda::set_grad_epilogues(cuda::GradEpilogues::automatic);
}

namespace {

// A feed-forward ReLU pair on the GPU (ops::linear_relu_masked for fc1, ops::linear_backward_relu
// for fc2's backward) against the CPU ops: h = relu(x W1^T + b1) [rows, f] within the products'
// bound; the gradient at the ReLU's input against the CPU's relu_backward(h, dy W2) computed from
// the GPU's h (so both take the same elements as positive), zero exactly where h is; fc2's weight
// and bias gradients as check_linear's. Returns whether the forward wrote a mask.
template <typename T>
bool check_relu_pair(std::int64_t rows, std::int64_t in, std::int64_t f, std::int64_t d) {
  INFO("rows=" << rows << " in=" << in << " f=" << f << " d=" << d << " T=" << dtype_name(dtype_of<T>()));
  const DType dt = dtype_of<T>();
  const double eps = parity::kEpsF32;
  const Tensor x = parity::random_tensor({rows, in}, dt, 31), w1 = parity::random_tensor({f, in}, dt, 32);
  const Tensor b1 = parity::random_tensor({f}, dt, 33), w2 = parity::random_tensor({d, f}, dt, 34);
  const Tensor dy = parity::random_tensor({rows, d}, dt, 35);
  Tensor mask;
  const Tensor gh = ops::linear_relu_masked(x.to(kGpu), w1.to(kGpu), b1.to(kGpu), mask);
  const std::vector<double> h = parity::as_doubles(gh), h_ref = parity::as_doubles(ops::linear_relu(x, w1, b1));
  test::check_close(
      h, h_ref, [&](std::size_t i) { return parity::ulp(h_ref[i], dt) + 4 * std::sqrt(double(in)) * eps * (in + 1); },
      "linear_relu_masked");
  if (mask.defined()) CHECK(mask.numel() == cuda::relu_mask_bytes(rows, f));

  Tensor dw = Tensor::zeros({d, f}, DType::kF32), db = Tensor::zeros({d}, DType::kF32);
  Tensor gdw = dw.to(kGpu), gdb = db.to(kGpu);
  const Tensor h_host = gh.to(Device::cpu());
  const std::vector<double> dh =
      parity::as_doubles(ops::linear_backward_relu(gh, w2.to(kGpu), dy.to(kGpu), gdw, gdb, mask));
  const std::vector<double> dh_ref = parity::as_doubles(ops::linear_backward_relu(h_host, w2, dy, dw, db, Tensor()));
  // Elements whose pre-activation is within the products' error of 0 (by the CPU's f32 product of the
  // same operands) and whose output is 0 are not compared: the mask is taken before the rounding to
  // T, so where f16 rounds a positive pre-activation below 2^-25 to 0, the gradient goes through.
  const std::vector<double> pre =
      parity::as_doubles(ops::linear(x.to(DType::kF32), w1.to(DType::kF32), b1.to(DType::kF32)));
  const double near_zero = 4 * std::sqrt(double(in)) * eps * (in + 1) + 6e-8;
  const auto exempt = [&](std::size_t i) { return h[i] == 0 && std::fabs(pre[i]) <= near_zero; };
  test::check_close(
      dh, dh_ref,
      [&](std::size_t i) {
        return exempt(i) ? 1e300 : parity::ulp(dh_ref[i], dt) + 4 * std::sqrt(double(d)) * eps * d;
      },
      "linear_backward_relu");
  std::int64_t through_zero = 0;  // gradient let through where the ReLU's output is 0
  for (std::size_t i = 0; i < h.size(); ++i) through_zero += h[i] == 0 && dh[i] != 0 && !exempt(i);
  CHECK(through_zero == 0);
  const double bound = 4 * std::sqrt(double(rows)) * eps * (rows + 1);
  const std::vector<double> w = parity::as_doubles(gdw), w_ref = parity::as_doubles(dw);
  test::check_close(
      w, w_ref, [&](std::size_t i) { return parity::ulp(w_ref[i], DType::kF32) + bound; }, "fc2 dweight");
  const std::vector<double> b = parity::as_doubles(gdb), b_ref = parity::as_doubles(db);
  test::check_close(
      b, b_ref, [&](std::size_t i) { return parity::ulp(b_ref[i], DType::kF32) + bound; }, "fc2 dbias");
  return mask.defined();
}

}  // namespace

TEST_CASE("the feed-forward ReLU on a GPU: its mask from fc1's product, its gradient in fc2's", "[cuda][linear]") {
  const Dims kPairs[] = {{1, 7, 33}, {33, 32, 255}, {255, 33, 1025}, {1025, 64, 513}};  // rows, in, f (d = in)
  for (const cuda::GradEpilogues epilogues : {cuda::GradEpilogues::automatic, cuda::GradEpilogues::off}) {
    cuda::set_grad_epilogues(epilogues);
    const bool off = epilogues == cuda::GradEpilogues::off;
    INFO("epilogues: " << (off ? "off" : "automatic"));
    for (const Dims& p : kPairs) {
      CHECK_FALSE((check_relu_pair<float>(p.m, p.n, p.k, p.n) && off));  // off: never a mask
      CHECK_FALSE((check_relu_pair<bf16>(p.m, p.n, p.k, p.n) && off));
      CHECK_FALSE((check_relu_pair<f16>(p.m, p.n, p.k, p.n) && off));
    }
  }
  cuda::set_grad_epilogues(cuda::GradEpilogues::automatic);
  // A big model's feed-forward (d_model 1,024, 4,096 hidden units, 2,048 rows): cuBLASLt must write
  // the mask (on the GPUs we target), and take the DRELU product with it.
  CHECK(check_relu_pair<bf16>(2048, 1024, 4096, 1024));
  CHECK(check_relu_pair<f16>(2048, 1024, 4096, 1024));
  const Tensor x = parity::random_tensor({2048, 1024}, DType::kBF16, 41).to(kGpu);
  const Tensor w1 = parity::random_tensor({4096, 1024}, DType::kBF16, 42).to(kGpu);
  const Tensor w2 = parity::random_tensor({1024, 4096}, DType::kBF16, 43).to(kGpu);
  Tensor mask;
  const Tensor h = ops::linear_relu_masked(x, w1, Tensor(), mask);
  REQUIRE(mask.defined());
  Tensor dh = Tensor::empty({2048, 4096}, DType::kBF16, kGpu);
  CHECK(cuda::gemm_drelu<bf16>(false, false, 2048, 4096, 1024, x.data<bf16>(), 1024, w2.data<bf16>(), 4096,
                               dh.data<bf16>(), mask.raw_data(), 0));
  Tensor misaligned = Tensor::empty({cuda::relu_mask_bytes(2048, 4096) + 16}, DType::kU8, kGpu);
  CHECK_FALSE(cuda::gemm_drelu<bf16>(false, false, 2048, 4096, 1024, x.data<bf16>(), 1024, w2.data<bf16>(), 4096,
                                     dh.data<bf16>(), static_cast<unsigned char*>(misaligned.raw_data()) + 16, 0));
  // A mask of another shape is refused by the op.
  Tensor dw = Tensor::zeros({1024, 4096}, DType::kF32, kGpu), no_bias;
  CHECK_THROWS_WITH(ops::linear_backward_relu(h, w2, x, dw, no_bias, misaligned), Catch::Contains("relu_mask"));
}

TEST_CASE("ops::matmul on a GPU matches the CPU; f64 is a clear error", "[cuda][linear]") {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const Tensor a = parity::random_tensor(ta ? Shape{33, 31} : Shape{31, 33}, DType::kBF16, 31);
      const Tensor b = parity::random_tensor(tb ? Shape{7, 33} : Shape{33, 7}, DType::kBF16, 32);
      const std::vector<double> got = parity::as_doubles(ops::matmul(a.to(kGpu), b.to(kGpu), ta, tb)),
                                ref = parity::as_doubles(ops::matmul(a, b, ta, tb));
      test::check_close(
          got, ref, [&](std::size_t i) { return parity::ulp(ref[i], DType::kBF16) + 4 * std::sqrt(33.0) * 33 * 1e-7; },
          "matmul");
    }
  }
  const Tensor a64 = Tensor::zeros({2, 2}, DType::kF64, kGpu);
  CHECK_THROWS_WITH(ops::matmul(a64, a64), Catch::Contains("f64 has no CUDA kernels"));
}

}  // namespace dragoman
