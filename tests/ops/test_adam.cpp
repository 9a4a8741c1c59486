// Adam: cpu::adam_step against a hand-computed two-step update, with and without weight decay; the
// fp32 masters' compute-dtype mirror (bf16/f16) is store<M>(master) bit for bit and leaves the
// masters' update unchanged (the CPU's tests). For every op case (each device and dtype of the test
// binary): ops::adam_step's mirror and its dtype checks, ops::grad_norm_factor's values, and
// adam_step with its factor equals scaling the gradients first (a NaN factor: nothing changes).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/adam.h"
#include "ops/adam.h"
#include "ops/elementwise.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;

// ---- Adam ---------------------------------------------------------------------------------------

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::adam_step matches a hand-computed two-step update", "[kernels]", float, double) {
  using T = TestType;
  // lr 0.1, beta1 0.9, beta2 0.98, eps 1e-9. Element 0: param 1, gradients 0.5 then -0.25.
  //   step 1: m = 0.05, v = 0.02 * 0.25 = 0.005; m^ = 0.05 / 0.1 = 0.5, v^ = 0.005 / 0.02 = 0.25
  //           param = 1 - 0.1 * 0.5 / (0.5 + 1e-9) = 0.9000000002
  //   step 2: m = 0.045 - 0.025 = 0.02, v = 0.0049 + 0.02 * 0.0625 = 0.00615
  //           m^ = 0.02 / 0.19, v^ = 0.00615 / 0.0396; param = 0.9000000002 - 0.1 m^ / (sqrt(v^) + 1e-9)
  //           = 0.8732892289124211
  // Element 1: param -2, gradients 0 then 1: step 1 leaves it (0 / (0 + eps)); step 2: m = 0.1,
  //   v = 0.02, param = -2 - 0.1 (0.1 / 0.19) / (sqrt(0.02 / 0.0396) + 1e-9) = -2.0740591961035277.
  // With weight decay 0.01 the update adds 0.01 * param:
  //   element 0: 1 - 0.1 (0.999999998 + 0.01) = 0.8990000002, then 0.8713902289122212;
  //   element 1: -2 - 0.1 (0 - 0.02) = -1.998, then -1.998 - 0.1 (0.7405919610352784 - 0.01998)
  //              = -2.070061196103528.
  struct Expected {
    double weight_decay;
    double m1[2], v1[2], p1[2], m2[2], v2[2], p2[2];
  };
  const Expected cases[] = {
      {0.0,
       {0.05, 0.0},
       {0.005, 0.0},
       {0.9000000002, -2.0},
       {0.02, 0.1},
       {0.00615, 0.02},
       {0.8732892289124211, -2.0740591961035277}},
      {0.01,
       {0.05, 0.0},
       {0.005, 0.0},
       {0.8990000002, -1.998},
       {0.02, 0.1},
       {0.00615, 0.02},
       {0.8713902289122212, -2.070061196103528}},
  };
  for (const Expected& e : cases) {
    INFO("weight decay " << e.weight_decay);
    std::vector<T> param = {T(1), T(-2)}, m = {T(0), T(0)}, v = {T(0), T(0)};
    ops::AdamHyper hyper;
    hyper.lr = 0.1, hyper.beta1 = 0.9, hyper.beta2 = 0.98, hyper.eps = 1e-9, hyper.weight_decay = e.weight_decay;
    const double tol = std::is_same<T, float>::value ? 1e-6 : 1e-13;
    const std::vector<T> g1 = {T(0.5), T(0)}, g2 = {T(-0.25), T(1)};
    hyper.step = 1;
    cpu::adam_step<T>(param.data(), g1.data(), m.data(), v.data(), 2, hyper);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(m[i] == Approx(e.m1[i]).margin(tol));
      CHECK(v[i] == Approx(e.v1[i]).margin(tol));
      CHECK(param[i] == Approx(e.p1[i]).margin(tol));
    }
    hyper.step = 2;
    cpu::adam_step<T>(param.data(), g2.data(), m.data(), v.data(), 2, hyper);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(m[i] == Approx(e.m2[i]).margin(tol));
      CHECK(v[i] == Approx(e.v2[i]).margin(tol));
      CHECK(param[i] == Approx(e.p2[i]).margin(tol));
    }
  }
}

namespace {

template <typename T>
bool same_bits(const std::vector<T>& a, const T* b) {
  return std::memcmp(a.data(), b, a.size() * sizeof(T)) == 0;
}

// Three steps with and without a mirror of type M at n elements: the same master bits, and the
// mirror is the masters rounded once.
template <typename M>
void check_mirror(int64_t n) {
  INFO("n " << n);
  std::vector<float> p1 = test::random_values<float>(n, 1), m1(test::at(n), 0.0f), v1(test::at(n), 0.0f);
  test::GuardedBuffer<float> p2(n), m2(n), v2(n);
  test::GuardedBuffer<M> mirror(n);
  std::copy(p1.begin(), p1.end(), p2.data());
  ops::AdamHyper hyper;
  hyper.lr = 0.01;
  hyper.weight_decay = 0.1;
  for (std::int64_t step = 1; step <= 3; ++step) {
    const std::vector<float> g = test::random_values<float>(n, 10 + static_cast<std::uint64_t>(step), 4.0);
    hyper.step = step;
    cpu::adam_step<float>(p1.data(), g.data(), m1.data(), v1.data(), n, hyper);
    cpu::adam_step<M>(p2.data(), g.data(), m2.data(), v2.data(), n, hyper, mirror.data());
  }
  CHECK(same_bits(p1, p2.data()));
  CHECK(same_bits(m1, m2.data()));
  CHECK(same_bits(v1, v2.data()));
  std::vector<M> expected(test::at(n));
  for (int64_t i = 0; i < n; ++i) expected[test::at(i)] = store<M>(p1[test::at(i)]);
  CHECK(same_bits(expected, mirror.data()));
  CHECK((p2.intact() && m2.intact() && v2.intact() && mirror.intact()));
}

}  // namespace

DRAGOMAN_CPU_TEST_CASE("cpu::adam_step refreshes a bf16/f16 mirror of fp32 masters in the same pass", "[kernels]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      // The masters are accumulator_dtype(compute dtype); only bf16 and f16 have a mirror.
      if (c.dtype == DType::kBF16) {
        for (const int64_t n : test::awkward_sizes()) check_mirror<bf16>(n);
      } else if (c.dtype == DType::kF16) {
        for (const int64_t n : test::awkward_sizes()) check_mirror<f16>(n);
      } else {
        CHECK(accumulator_dtype(c.dtype) == c.dtype);
      }
    }
  }
}

// The masters of an op case are accumulator_dtype(c.dtype) on c.device (f32 or f64); a bf16 or f16
// case also has its mirror.
TEST_CASE("ops::adam_step with a mirror checks its dtypes and fills it", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const int64_t n = 33;
      const DType master = accumulator_dtype(c.dtype);
      Tensor param = test::from_doubles(test::random_doubles(n, 1), {n}, master, c.device);
      const Tensor grad = test::from_doubles(test::random_doubles(n, 2), {n}, master, c.device);
      Tensor m = Tensor::zeros({n}, master, c.device), v = Tensor::zeros({n}, master, c.device);
      ops::AdamHyper hyper;
      hyper.lr = 0.01;
      if (c.dtype == DType::kBF16 || c.dtype == DType::kF16) {
        Tensor mirror = Tensor::zeros({n}, c.dtype, c.device);
        ops::adam_step(param, grad, m, v, hyper, &mirror);
        CHECK(test::to_doubles(mirror) == test::rounded_to(test::to_doubles(param), c.dtype));
        Tensor wrong = Tensor::zeros({n}, DType::kF32, c.device);
        CHECK_THROWS_WITH(ops::adam_step(param, grad, m, v, hyper, &wrong), Catch::Contains("bf16 or f16"));
      } else {
        // An f32 or f64 case has no mirror; its masters refuse one of another accumulator.
        Tensor mirror = Tensor::zeros({n}, DType::kBF16, c.device);
        if (master == DType::kF64) {
          CHECK_THROWS_WITH(ops::adam_step(param, grad, m, v, hyper, &mirror), Catch::Contains("accumulator dtype"));
        } else {
          ops::adam_step(param, grad, m, v, hyper, &mirror);  // f32 masters of a bf16 mirror: allowed
          CHECK(test::to_doubles(mirror) == test::rounded_to(test::to_doubles(param), DType::kBF16));
        }
      }
    }
  }
}

// ---- The gradient factor (ops::grad_norm_factor) --------------------------------------------------

TEST_CASE("ops::grad_norm_factor gives the norm and the unscaling and clipping factor", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      // Gradients are parameter gradients: the accumulator dtype of the case.
      const DType dtype = accumulator_dtype(c.dtype);
      const Tensor g = test::from_doubles({3.0, 4.0, 0.0}, {3}, dtype, c.device);  // norm 5
      const auto nf = [&](double clip, double scale) {
        const Tensor factor = ops::grad_norm_factor(g, clip, scale);
        CHECK(factor.device() == c.device);  // stays where the gradients are
        return factor.to(Device::cpu()).to_vector<double>();
      };
      CHECK(nf(0.0, 1.0) == std::vector<double>{5.0, 1.0});    // no clipping
      CHECK(nf(10.0, 1.0) == std::vector<double>{5.0, 1.0});   // below the threshold
      CHECK(nf(2.0, 1.0) == std::vector<double>{5.0, 0.4});    // clipped to norm 2
      CHECK(nf(0.0, 4.0) == std::vector<double>{1.25, 0.25});  // an fp16 loss scale of 4: unscaled
      CHECK(nf(1.0, 4.0) == std::vector<double>{1.25, 0.25 * (1.0 / 1.25)});
      const Tensor inf = test::from_doubles({1.0, std::numeric_limits<double>::infinity()}, {2}, dtype, c.device);
      const std::vector<double> bad = ops::grad_norm_factor(inf, 1.0, 1.0).to(Device::cpu()).to_vector<double>();
      CHECK(std::isinf(bad[0]));
      CHECK(std::isnan(bad[1]));
      CHECK_THROWS_WITH(ops::grad_norm_factor(g, 1.0, 0.0), Catch::Contains("loss scale"));
    }
  }
}

TEST_CASE("adam_step with a gradient factor equals scaling the gradients first and a NaN factor changes nothing",
          "[ops]") {
  const int64_t n = 10007;  // crosses the f32 kernel's blocks of 4,096
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const DType dtype = accumulator_dtype(c.dtype);  // the masters'; bf16 and f16 cases have a mirror
      const bool with_mirror = dtype != c.dtype;
      const Tensor param0 = test::from_doubles(test::random_doubles(n, 71), {n}, dtype, c.device);
      const Tensor grad = test::from_doubles(test::random_doubles(n, 72, 3.0), {n}, dtype, c.device);
      ops::AdamHyper hyper;
      hyper.lr = 1e-2;
      hyper.step = 3;
      const auto run = [&](const Tensor& g, const Tensor* factor, std::vector<Tensor>& state) {
        state = {param0.clone(), Tensor::zeros({n}, dtype, c.device), Tensor::zeros({n}, dtype, c.device),
                 Tensor::zeros({n}, with_mirror ? c.dtype : DType::kBF16, c.device)};
        for (int i = 0; i < 2; ++i) {
          ops::adam_step(state[0], g, state[1], state[2], hyper, with_mirror ? &state[3] : nullptr, factor);
        }
      };
      const Tensor nf = ops::grad_norm_factor(grad, 1.0, 1.0);  // clipped: the factor is below 1
      const double factor = nf.to(Device::cpu()).to_vector<double>()[1];
      REQUIRE(factor < 1.0);
      Tensor scaled = grad.clone();
      ops::scale_(scaled, factor);
      std::vector<Tensor> with_factor, prescaled, untouched;
      run(grad, &nf, with_factor);
      run(scaled, nullptr, prescaled);
      for (std::size_t i = 0; i < 4; ++i) CHECK(test::to_doubles(with_factor[i]) == test::to_doubles(prescaled[i]));
      const Tensor nan = Tensor::from_vector(std::vector<double>{std::nan(""), std::nan("")}, {2}).to(c.device);
      run(grad, &nan, untouched);
      CHECK(test::to_doubles(untouched[0]) == test::to_doubles(param0));
      CHECK(test::to_doubles(untouched[1]) == std::vector<double>(n, 0.0));
      const Tensor misplaced = Tensor::from_vector(std::vector<double>{1.0}, {1}).to(c.device);
      CHECK_THROWS_WITH(ops::adam_step(untouched[0], grad, untouched[1], untouched[2], hyper, nullptr, &misplaced),
                        Catch::Contains("grad_factor"));
      if (!c.device.is_cpu()) {  // a factor on another device than the parameters
        const Tensor on_host = Tensor::from_vector(std::vector<double>{1.0, 1.0}, {2});
        CHECK_THROWS_WITH(ops::adam_step(untouched[0], grad, untouched[1], untouched[2], hyper, nullptr, &on_host),
                          Catch::Contains("on param's device"));
      }
    }
  }
}

}  // namespace dragoman
