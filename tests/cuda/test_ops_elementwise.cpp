// The element-wise CUDA kernels (kernels/elementwise.h) against their CPU specs for f64, f32,
// bf16 and f16 at awkward sizes (and one element past 16-byte alignment), with sentinels after every
// output: add, accumulate, scale, ReLU, bias_add, dropout and dropout_add bit for bit (the packed and the element
// paths); Swish within a few ulps (each device's exp);
// bias_backward bit for bit up to kColumnSumChunkRows rows and within float reassociation beyond, the same bits on a
// second run; sum_squares within 1e-12 relative (double sums in another order), the same bits on a second run. Then the
// ops on GPU tensors equal the ops on CPU tensors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "kernels/elementwise.h"
#include "ops/elementwise.h"
#include "parity_testing.h"

namespace dragoman {
namespace {

using test::DeviceBuffer;
using test::random_values;

// Random values with exact zeros (both signs) among them, for ReLU's comparisons.
template <typename T>
std::vector<T> with_zeros(std::vector<T> values) {
  for (std::size_t i = 0; i < values.size(); i += 5) values[i] = store<T>(i % 10 == 0 ? acc_t<T>(0) : -acc_t<T>(0));
  return values;
}

}  // namespace

TEMPLATE_TEST_CASE("cuda element-wise kernels equal their CPU specs bit for bit", "[cuda][elementwise]", double, float,
                   bf16, f16) {
  using T = TestType;
  const cuda::Stream stream = test::test_stream();
  for (const std::int64_t n : test::parity_sizes()) {
    INFO("n = " << n);
    const auto un = static_cast<std::size_t>(n);
    const std::vector<T> a = with_zeros(random_values<T>(un, 1)), b = random_values<T>(un, 2, -4.0, 4.0);
    std::vector<T> expected(un);
    {
      DeviceBuffer<T> da(a), db(b), dy(un);
      cuda::add<T>(da.get(), db.get(), dy.get(), n, stream);
      cpu::add<T>(a.data(), b.data(), expected.data(), n);
      test::check_bits(dy.download(), expected, "add");
      dy.check_sentinel();
      cuda::accumulate<T>(da.get(), db.get(), n, stream);  // a += b: the same sum
      test::check_bits(da.download(), expected, "accumulate");
      da.check_sentinel();
      cuda::scale<T>(da.get(), static_cast<acc_t<T>>(0.37), n, stream);
      cpu::scale<T>(expected.data(), static_cast<acc_t<T>>(0.37), n);
      test::check_bits(da.download(), expected, "scale");
      da.check_sentinel();
    }
    {
      DeviceBuffer<T> dx(a), dg(b), dy(un), ddx(un);
      cuda::relu_forward<T>(dx.get(), dy.get(), n, stream);
      cpu::relu_forward<T>(a.data(), expected.data(), n);
      test::check_bits(dy.download(), expected, "relu_forward");
      dy.check_sentinel();
      std::vector<T> expected_dx(un);
      cuda::relu_backward<T>(dy.get(), dg.get(), ddx.get(), n, stream);
      cpu::relu_backward<T>(expected.data(), b.data(), expected_dx.data(), n);
      test::check_bits(ddx.download(), expected_dx, "relu_backward");
      ddx.check_sentinel();
    }
    {
      // Swish: the same formula, each device's own exp (a few acc_t ulps apart).
      const double tolerance = 4 * test::unit_roundoff<T>() + (std::is_same_v<T, double> ? 1e-14 : 1e-6);
      const auto within = [&](const std::vector<T>& e) {
        return [&e, tolerance](std::size_t i) { return tolerance * (1 + std::fabs(test::as_double(e[i]))); };
      };
      DeviceBuffer<T> dx(b), dg(a), dy(un), ddx(un);
      cuda::swish_forward<T>(dx.get(), dy.get(), n, stream);
      cpu::swish_forward<T>(b.data(), expected.data(), n);
      test::check_close(dy.download(), expected, within(expected), "swish_forward");
      dy.check_sentinel();
      std::vector<T> expected_dx(un);
      cuda::swish_backward<T>(dx.get(), dg.get(), ddx.get(), n, stream);
      cpu::swish_backward<T>(b.data(), a.data(), expected_dx.data(), n);
      test::check_close(ddx.download(), expected_dx, within(expected_dx), "swish_backward");
      ddx.check_sentinel();
    }
    if (n > 8) {
      // Pointers off the buffers' 16-byte alignment (one element) in every operand or in one: the
      // kernels' element-at-a-time path, which any misaligned operand must select (the aligned
      // buffers above take the 16-byte packs, and this path past the last whole pack). An offset of
      // 8 elements keeps the alignment; the elements before an output's offset keep their bits.
      const std::int64_t m = n - 8;
      struct Offsets {
        std::int64_t x0, x1, y;
      };
      for (const Offsets o : {Offsets{1, 1, 1}, Offsets{8, 1, 8}, Offsets{8, 8, 1}, Offsets{1, 8, 8}}) {
        INFO("offsets " << o.x0 << ", " << o.x1 << ", " << o.y);
        DeviceBuffer<T> da(a), db(b), dy(b);
        std::vector<T> e = b;
        cuda::add<T>(da.get() + o.x0, db.get() + o.x1, dy.get() + o.y, m, stream);
        cpu::add<T>(a.data() + o.x0, b.data() + o.x1, e.data() + o.y, m);
        test::check_bits(dy.download(), e, "add, unaligned");
        cuda::relu_backward<T>(da.get() + o.x0, db.get() + o.x1, dy.get() + o.y, m, stream);
        cpu::relu_backward<T>(a.data() + o.x0, b.data() + o.x1, e.data() + o.y, m);
        test::check_bits(dy.download(), e, "relu_backward, unaligned");
        cuda::relu_forward<T>(da.get() + o.x0, dy.get() + o.y, m, stream);
        cpu::relu_forward<T>(a.data() + o.x0, e.data() + o.y, m);
        test::check_bits(dy.download(), e, "relu_forward, unaligned");
        cuda::dropout<T>(da.get() + o.x0, dy.get() + o.y, m, 0.1, 1234, 0x1000000000000005ull, stream);
        cpu::dropout<T>(a.data() + o.x0, e.data() + o.y, m, 0.1, 1234, 0x1000000000000005ull);
        test::check_bits(dy.download(), e, "dropout, unaligned");
        cuda::dropout_add<T>(da.get() + o.x0, db.get() + o.x1, dy.get() + o.y, m, 0.1, 1234, 0x1000000000000005ull,
                             stream);
        cpu::dropout_add<T>(a.data() + o.x0, b.data() + o.x1, e.data() + o.y, m, 0.1, 1234, 0x1000000000000005ull);
        test::check_bits(dy.download(), e, "dropout_add, unaligned");
        dy.check_sentinel();
        std::vector<T> accumulated = a;
        cuda::accumulate<T>(da.get() + o.x0, db.get() + o.x1, m, stream);
        cpu::add<T>(a.data() + o.x0, b.data() + o.x1, accumulated.data() + o.x0, m);
        test::check_bits(da.download(), accumulated, "accumulate, unaligned");
        cuda::scale<T>(da.get() + o.x0, static_cast<acc_t<T>>(0.37), m, stream);
        cpu::scale<T>(accumulated.data() + o.x0, static_cast<acc_t<T>>(0.37), m);
        test::check_bits(da.download(), accumulated, "scale, unaligned");
        da.check_sentinel();
      }
    }
    for (const double p : {0.1, 0.5}) {
      DeviceBuffer<T> dx(b), dy(un);
      cuda::dropout<T>(dx.get(), dy.get(), n, p, 1234, 0x1000000000000005ull, stream);
      cpu::dropout<T>(b.data(), expected.data(), n, p, 1234, 0x1000000000000005ull);
      test::check_bits(dy.download(), expected, "dropout");
      dy.check_sentinel();
      DeviceBuffer<T> da(a), dsum(un);
      cuda::dropout_add<T>(da.get(), dx.get(), dsum.get(), n, p, 1234, 0x1000000000000005ull, stream);
      cpu::dropout_add<T>(a.data(), b.data(), expected.data(), n, p, 1234, 0x1000000000000005ull);
      test::check_bits(dsum.download(), expected, "dropout_add");
      dsum.check_sentinel();
      cuda::dropout_add<T>(da.get(), dx.get(), da.get(), n, p, 1234, 0x1000000000000005ull, stream);  // in place
      test::check_bits(da.download(), expected, "dropout_add in place");
    }
  }
}

TEMPLATE_TEST_CASE("cuda bias kernels equal their CPU specs", "[cuda][elementwise]", double, float, bf16, f16) {
  using T = TestType;
  using A = acc_t<T>;
  const cuda::Stream stream = test::test_stream();
  for (const std::int64_t rows : {1, 7, 128, 129, 513, 1025}) {
    for (const std::int64_t cols : {1, 33, 255, 513}) {
      INFO("rows = " << rows << ", cols = " << cols);
      const auto n = static_cast<std::size_t>(rows * cols), uc = static_cast<std::size_t>(cols);
      const std::vector<T> y = random_values<T>(n, 3), bias = random_values<T>(uc, 4);
      std::vector<T> expected = y;
      DeviceBuffer<T> dy(y), dbias(bias);
      cuda::bias_add<T>(dy.get(), dbias.get(), rows, cols, stream);
      cpu::bias_add<T>(expected.data(), bias.data(), rows, cols);
      test::check_bits(dy.download(), expected, "bias_add");
      dy.check_sentinel();

      // db starts non-zero: the kernel accumulates.
      const std::vector<A> db0 = random_values<A>(uc, 5);
      std::vector<A> db_expected = db0;
      cpu::bias_backward<T>(y.data(), db_expected.data(), rows, cols);
      DeviceBuffer<A> ddb(db0), workspace(static_cast<std::size_t>(cuda::column_sum_chunks(rows) * cols));
      DeviceBuffer<T> dgrad(y);
      cuda::bias_backward<T>(dgrad.get(), ddb.get(), rows, cols, workspace.get(), stream);
      const std::vector<A> db = ddb.download();
      ddb.check_sentinel();
      workspace.check_sentinel();
      if (rows <= cuda::kColumnSumChunkRows) {
        test::check_bits(db, db_expected, "bias_backward (one chunk: the CPU's order)");
      } else {
        // Chunk sums added in order: reassociated float sums, within the reordering tolerance of
        // the column's magnitudes.
        std::vector<double> magnitude(uc);
        for (std::size_t c = 0; c < uc; ++c) {
          magnitude[c] = std::fabs(test::as_double(db0[c]));
          for (std::int64_t r = 0; r < rows; ++r) magnitude[c] += std::fabs(test::as_double(y[r * cols + c]));
        }
        test::check_close<A>(
            db, db_expected, [&](std::size_t c) { return test::reorder_tolerance<T>() * magnitude[c]; },
            "bias_backward");
      }
      // Deterministic: a second run from the same start gives the same bits.
      ddb.upload(db0);
      cuda::bias_backward<T>(dgrad.get(), ddb.get(), rows, cols, workspace.get(), stream);
      test::check_bits(ddb.download(), db, "bias_backward, second run");
    }
  }
}

TEMPLATE_TEST_CASE("cuda sum_squares equals the CPU's within double reassociation", "[cuda][elementwise]", double,
                   float, bf16, f16) {
  using T = TestType;
  const cuda::Stream stream = test::test_stream();
  for (const std::int64_t n : std::vector<std::int64_t>{1, 7, 31, 32, 33, 255, 513, 1025, 32000, 65537, 1000003}) {
    INFO("n = " << n);
    const std::vector<T> x = random_values<T>(static_cast<std::size_t>(n), 6, -3.0, 3.0);
    const double expected = cpu::sum_squares<T>(x.data(), n);
    DeviceBuffer<T> dx(x);
    DeviceBuffer<double> partials(static_cast<std::size_t>(cuda::sum_squares_blocks(n))), result(1);
    cuda::sum_squares<T>(dx.get(), n, partials.get(), result.get(), stream);
    const double got = result.download()[0];
    // Both sums are of positive terms in double: each within n * 2^-53 relative of the exact sum.
    CHECK(std::fabs(got - expected) <= 1e-12 * expected);
    partials.check_sentinel();
    result.check_sentinel();
    cuda::sum_squares<T>(dx.get(), n, partials.get(), result.get(), stream);
    CHECK(result.download()[0] == got);
  }
}

TEST_CASE("Element-wise ops on GPU tensors equal the ops on CPU tensors", "[cuda][elementwise][ops]") {
  const Device gpu = Device::cuda(0);
  for (const DType dtype : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16}) {
    INFO(dtype_name(dtype));
    const Tensor a = Tensor::from_vector(random_values<float>(1025, 7, -2.0, 2.0), {5, 205}).to(dtype);
    const Tensor b = Tensor::from_vector(random_values<float>(1025, 8), {5, 205}).to(dtype);
    const Tensor ga = a.to(gpu), gb = b.to(gpu);
    const auto same = [](const Tensor& gpu_result, const Tensor& cpu_result) {
      const Tensor host = gpu_result.to(Device::cpu()).to(DType::kF64);
      CHECK(host.to_vector<double>() == cpu_result.to(DType::kF64).to_vector<double>());
    };
    same(ops::add(ga, gb), ops::add(a, b));
    same(ops::relu(ga), ops::relu(a));
    same(ops::relu_backward(ops::relu(ga), gb), ops::relu_backward(ops::relu(a), b));
    same(ops::dropout(ga, 0.3, 99, 5), ops::dropout(a, 0.3, 99, 5));
    same(ops::dropout_add(ga, gb, 0.3, 99, 5), ops::dropout_add(a, b, 0.3, 99, 5));
    Tensor gy = ga.clone(), y = a.clone();
    ops::add_(gy, gb);
    ops::add_(y, b);
    ops::scale_(gy, 0.5);
    ops::scale_(y, 0.5);
    same(gy, y);
    const double expected = ops::sum_squares(a);
    CHECK(std::fabs(ops::sum_squares(ga) - expected) <= 1e-12 * expected);
  }
}

}  // namespace dragoman
