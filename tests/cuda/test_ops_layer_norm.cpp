// cuda::layer_norm_forward/backward (kernels/layer_norm.h) against the CPU spec for f64, f32,
// bf16 and f16 over awkward row lengths (1 ... 1025 and a 32000-element row; 8 ... 1,024, whole
// 16-byte packs, for the kernels that hold a row in registers), with sentinels after
// every output. Their row sums run in another order than the CPU's (a warp per row), so:
//   mean, rstd: within the reordering tolerance (test::reorder_tolerance) of the row's magnitudes;
//   y, dx: within one rounding of T of the CPU's element, plus the reordering tolerance times the
//     magnitudes of the terms of its formula (a statistic off in its last float bits moves the
//     float result by that much before it is rounded to T);
//   dweight, dbias (fed the CPU's statistics, so the terms are the same): bit for bit up to
//     kColumnSumChunkRows rows (the CPU's order), within the reordering tolerance beyond;
// and a second backward run gives the same bits. The backward with the dropout of dx (DxDropout)
// gives the same dx and parameter gradients and the CPU dropout of that dx bit for bit, with an
// aligned output (the register kernels write it) and a misaligned one (cuda::dropout after). Then
// the ops on GPU tensors match the CPU ops.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/tensor.h"
#include "kernels/elementwise.h"
#include "kernels/layer_norm.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "parity_testing.h"

namespace dragoman {
namespace {

using test::as_double;
using test::DeviceBuffer;
using test::random_values;

struct Shape2 {
  std::int64_t rows, d;
};

// Whether two tensors (on any device) hold the same bytes.
bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()) == 0;
}

}  // namespace

TEMPLATE_TEST_CASE("cuda layer_norm equals the CPU spec within its summation order", "[cuda][layer_norm]", double,
                   float, bf16, f16) {
  using T = TestType;
  using A = acc_t<T>;
  const cuda::Stream stream = test::test_stream();
  const double k = test::reorder_tolerance<T>(), u = test::unit_roundoff<T>();
  // Rows of whole 16-byte packs (8, 32, 256, 512, 1,000, 1,024 elements) take the register kernels
  // up to 32 * 4 packs (bf16/f16 up to 1,024, float 512, double 256), the others the element ones.
  for (const Shape2 s : {Shape2{1, 1}, Shape2{3, 7}, Shape2{5, 31}, Shape2{33, 32}, Shape2{7, 33}, Shape2{130, 255},
                         Shape2{129, 513}, Shape2{300, 1025}, Shape2{2, 32000}, Shape2{9, 8}, Shape2{17, 256},
                         Shape2{131, 512}, Shape2{6, 1000}, Shape2{140, 1024}}) {
    INFO("rows = " << s.rows << ", d = " << s.d);
    const auto n = static_cast<std::size_t>(s.rows * s.d), ud = static_cast<std::size_t>(s.d),
               ur = static_cast<std::size_t>(s.rows);
    // Rows with an offset (the variance is a two-pass one) and weights around 1.
    const std::vector<T> x = random_values<T>(n, 11, 0.5, 2.5), w = random_values<T>(ud, 12, 0.5, 1.5),
                         b = random_values<T>(ud, 13, -0.5, 0.5), dy = random_values<T>(n, 14);
    std::vector<T> y(n), dx(n);
    std::vector<A> mean(ur), rstd(ur);
    cpu::layer_norm_forward<T>(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), s.rows, s.d, 1e-5);

    DeviceBuffer<T> dx_in(x), dw(w), db(b), dyv(n);
    DeviceBuffer<A> dmean(ur), drstd(ur);
    cuda::layer_norm_forward<T>(dx_in.get(), dw.get(), db.get(), dyv.get(), dmean.get(), drstd.get(), s.rows, s.d, 1e-5,
                                stream);
    std::vector<double> row_magnitude(ur, 0.0);
    for (std::size_t r = 0; r < ur; ++r) {
      for (std::size_t i = 0; i < ud; ++i) row_magnitude[r] += std::fabs(as_double(x[r * ud + i])) / s.d;
    }
    test::check_close<A>(
        dmean.download(), mean, [&](std::size_t r) { return k * row_magnitude[r]; }, "mean");
    test::check_close<A>(
        drstd.download(), rstd, [&](std::size_t r) { return k * as_double(rstd[r]); }, "rstd");
    test::check_close<T>(
        dyv.download(), y,
        [&](std::size_t i) {
          const std::size_t r = i / ud, c = i % ud;
          const double xhat = (as_double(x[i]) - as_double(mean[r])) * as_double(rstd[r]);
          const double terms = (std::fabs(xhat) + row_magnitude[r] * as_double(rstd[r])) * std::fabs(as_double(w[c])) +
                               std::fabs(as_double(b[c]));
          return 2 * u * std::fabs(as_double(y[i])) + k * terms;
        },
        "y");
    dyv.check_sentinel();
    dmean.check_sentinel();
    drstd.check_sentinel();

    // Backward from the CPU's statistics, accumulating into non-zero parameter gradients.
    const std::vector<A> dw0 = random_values<A>(ud, 15), db0 = random_values<A>(ud, 16);
    std::vector<A> dweight = dw0, dbias = db0;
    cpu::layer_norm_backward<T>(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx.data(), dweight.data(),
                                dbias.data(), s.rows, s.d);
    DeviceBuffer<T> ddy(dy), ddx(n);
    DeviceBuffer<A> cpu_mean(mean), cpu_rstd(rstd), ddw(dw0), ddb(db0),
        workspace(static_cast<std::size_t>(cuda::layer_norm_backward_workspace(s.rows, s.d)));
    cuda::layer_norm_backward<T>(ddy.get(), dx_in.get(), dw.get(), cpu_mean.get(), cpu_rstd.get(), ddx.get(), ddw.get(),
                                 ddb.get(), s.rows, s.d, workspace.get(), stream);
    test::check_close<T>(
        ddx.download(), dx,
        [&](std::size_t i) {
          const std::size_t r = i / ud, c = i % ud;
          // rstd * (|g| + mean|g| + |xhat| mean|g xhat|) bounds the terms; mean|g| <= max|w| * 1.
          const double xhat = (as_double(x[i]) - as_double(mean[r])) * as_double(rstd[r]);
          const double g = std::fabs(as_double(dy[i]) * as_double(w[c]));
          const double terms = as_double(rstd[r]) * (g + 1.5 + std::fabs(xhat) * 1.5 * 4.0);
          return 2 * u * std::fabs(as_double(dx[i])) + k * terms;
        },
        "dx");
    ddx.check_sentinel();
    const std::vector<A> got_dw = ddw.download(), got_db = ddb.download();
    ddw.check_sentinel();
    ddb.check_sentinel();
    workspace.check_sentinel();
    if (s.rows <= cuda::kColumnSumChunkRows) {
      test::check_bits(got_dw, dweight, "dweight (one chunk: the CPU's order)");
      test::check_bits(got_db, dbias, "dbias (one chunk: the CPU's order)");
    } else {
      std::vector<double> mag_w(ud, 0.0), mag_b(ud, 0.0);
      for (std::size_t c = 0; c < ud; ++c) {
        mag_w[c] = std::fabs(as_double(dw0[c]));
        mag_b[c] = std::fabs(as_double(db0[c]));
        for (std::size_t r = 0; r < ur; ++r) {
          const double g = std::fabs(as_double(dy[r * ud + c]));
          mag_w[c] += g * std::fabs((as_double(x[r * ud + c]) - as_double(mean[r])) * as_double(rstd[r]));
          mag_b[c] += g;
        }
      }
      test::check_close<A>(
          got_dw, dweight, [&](std::size_t c) { return k * mag_w[c]; }, "dweight");
      test::check_close<A>(
          got_db, dbias, [&](std::size_t c) { return k * mag_b[c]; }, "dbias");
    }
    // Deterministic: the same bits again.
    ddw.upload(dw0);
    ddb.upload(db0);
    const std::vector<T> first_dx = ddx.download();
    cuda::layer_norm_backward<T>(ddy.get(), dx_in.get(), dw.get(), cpu_mean.get(), cpu_rstd.get(), ddx.get(), ddw.get(),
                                 ddb.get(), s.rows, s.d, workspace.get(), stream);
    test::check_bits(ddx.download(), first_dx, "dx, second run");
    test::check_bits(ddw.download(), got_dw, "dweight, second run");
    test::check_bits(ddb.download(), got_db, "dbias, second run");

    // With the dropout of dx (DxDropout): dx and the parameter gradients the same bits, and dropped
    // the CPU dropout of that dx, bit for bit; aligned (the register kernels write it) and one
    // element off 16-byte alignment (cuda::dropout after the dx kernel).
    std::vector<T> dropped_ref(n);
    cpu::dropout<T>(first_dx.data(), dropped_ref.data(), s.rows * s.d, 0.1, 7, 3);
    for (const std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
      INFO("dropped at element offset " << offset);
      DeviceBuffer<T> dropped(n + offset);
      ddw.upload(dw0);
      ddb.upload(db0);
      cuda::layer_norm_backward<T>(ddy.get(), dx_in.get(), dw.get(), cpu_mean.get(), cpu_rstd.get(), ddx.get(),
                                   ddw.get(), ddb.get(), s.rows, s.d, workspace.get(), stream,
                                   cuda::DxDropout<T>{dropped.get() + offset, 0.1, 7, 3});
      test::check_bits(ddx.download(), first_dx, "dx, with the dropout");
      test::check_bits(ddw.download(), got_dw, "dweight, with the dropout");
      test::check_bits(ddb.download(), got_db, "dbias, with the dropout");
      const std::vector<T> all = dropped.download();
      test::check_bits(std::vector<T>(all.begin() + static_cast<std::ptrdiff_t>(offset), all.end()), dropped_ref,
                       "dropout(dx)");
      dropped.check_sentinel();
    }
  }
}

TEST_CASE("layer_norm ops on GPU tensors match the CPU ops", "[cuda][layer_norm][ops]") {
  const Device gpu = Device::cuda(0);
  // 513 elements a row: the element kernels; 256: the register kernels in every dtype.
  for (const std::int64_t d : {std::int64_t{513}, std::int64_t{256}}) {
    for (const DType dtype : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16}) {
      INFO(dtype_name(dtype) << ", d = " << d);
      const DType acc = accumulator_dtype(dtype);
      const Tensor x =
          Tensor::from_vector(random_values<float>(static_cast<std::size_t>(6 * d), 21, -2.0, 3.0), {2, 3, d})
              .to(dtype);
      const Tensor w =
          Tensor::from_vector(random_values<float>(static_cast<std::size_t>(d), 22, 0.5, 1.5), {d}).to(dtype);
      const Tensor b = Tensor::from_vector(random_values<float>(static_cast<std::size_t>(d), 23), {d}).to(dtype);
      const Tensor dy =
          Tensor::from_vector(random_values<float>(static_cast<std::size_t>(6 * d), 24), {2, 3, d}).to(dtype);
      ops::LayerNormSaved saved, gsaved;
      const Tensor y = ops::layer_norm(x, w, b, 1e-5, &saved);
      const Tensor gy = ops::layer_norm(x.to(gpu), w.to(gpu), b.to(gpu), 1e-5, &gsaved);
      CHECK(gy.device() == gpu);
      CHECK(gsaved.mean.dtype() == acc);
      Tensor dw = Tensor::zeros({d}, acc), db = Tensor::zeros({d}, acc);
      Tensor gdw = dw.to(gpu), gdb = db.to(gpu);
      const Tensor dx = ops::layer_norm_backward(dy, x, w, saved, dw, db);
      const Tensor gdx = ops::layer_norm_backward(dy.to(gpu), x.to(gpu), w.to(gpu), gsaved, gdw, gdb);
      const double tol = dtype == DType::kF64   ? 1e-12
                         : dtype == DType::kF32 ? 1e-5
                         : dtype == DType::kF16 ? 4e-3
                                                : 3e-2;
      const auto close = [&](const Tensor& got, const Tensor& expected, double scale) {
        const std::vector<double> g = got.to(Device::cpu()).to(DType::kF64).to_vector<double>();
        const std::vector<double> e = expected.to(DType::kF64).to_vector<double>();
        for (std::size_t i = 0; i < e.size(); ++i) CHECK(std::fabs(g[i] - e[i]) <= tol * scale * (1 + std::fabs(e[i])));
      };
      close(gy, y, 1);
      close(gdx, dx, 4);
      close(gdw, dw, 1);
      close(gdb, db, 1);
      // layer_norm_backward_dropout: the same dx, and ops::dropout of it, bit for bit.
      Tensor gdw2 = Tensor::zeros({d}, acc, gpu), gdb2 = Tensor::zeros({d}, acc, gpu);
      const ops::LayerNormDropoutGrads g =
          ops::layer_norm_backward_dropout(dy.to(gpu), x.to(gpu), w.to(gpu), gsaved, gdw2, gdb2, 0.1, 5, 9);
      CHECK(g.dx.device() == gpu);
      CHECK(same_bytes(g.dx, gdx));
      CHECK(same_bytes(g.dropped, ops::dropout(gdx, 0.1, 5, 9)));
      CHECK(same_bytes(gdw2, gdw));
      const ops::LayerNormDropoutGrads none =
          ops::layer_norm_backward_dropout(dy.to(gpu), x.to(gpu), w.to(gpu), gsaved, gdw2, gdb2, 0.0, 5, 9);
      CHECK(none.dropped.shares_storage(none.dx));
    }
  }
}

}  // namespace dragoman
