// Adam: cpu::adam_step against a hand-computed two-step update, with and without weight decay.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "kernels/cpu/adam.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;

// ---- Adam ---------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("cpu::adam_step matches a hand-computed two-step update", "[kernels]", float, double) {
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
    cpu::AdamHyper hyper;
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

}  // namespace dragoman
