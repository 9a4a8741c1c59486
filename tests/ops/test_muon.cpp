// Muon: cpu::newton_schulz against the scalar quintic on matrices with known singular vectors, and
// against a plain triple-loop iteration in double on random ones (wide, tall, square); cpu::muon_step
// against a hand-written update; ops::muon_step's contract; train's optimizer_step (Muon on the
// matrices, Adam with the same bits on the rest, the mirror following).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/adam.h"
#include "kernels/cpu/muon.h"
#include "model/parameters.h"
#include "ops/adam.h"
#include "ops/muon.h"
#include "ops/op_testing.h"
#include "train/optimizer.h"

namespace dragoman {

using std::int64_t;

namespace {

std::vector<double> random_values(int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = normal(rng);
  return v;
}

// The iteration written out with triple loops in double: X = a X + (b A + c A A) X, A = X X^T.
std::vector<double> newton_schulz_reference(std::vector<double> x, int64_t rows, int64_t cols, int64_t steps) {
  double norm = 0;
  for (double v : x) norm += v * v;
  norm = std::sqrt(norm) + 1e-7;
  for (double& v : x) v /= norm;
  const double a = cpu::kNewtonSchulzA, b = cpu::kNewtonSchulzB, c = cpu::kNewtonSchulzC;
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<double> gram(static_cast<std::size_t>(rows * rows)), poly(gram.size()), next(x.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < rows; ++j)
        for (int64_t k = 0; k < cols; ++k) gram[i * rows + j] += x[i * cols + k] * x[j * cols + k];
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < rows; ++j) {
        double aa = 0;
        for (int64_t k = 0; k < rows; ++k) aa += gram[i * rows + k] * gram[k * rows + j];
        poly[i * rows + j] = b * gram[i * rows + j] + c * aa;
      }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        double sum = a * x[i * cols + j];
        for (int64_t k = 0; k < rows; ++k) sum += poly[i * rows + k] * x[k * cols + j];
        next[i * cols + j] = sum;
      }
    x = next;
  }
  return x;
}

template <typename T>
std::vector<T> cast_all(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

}  // namespace

TEST_CASE("cpu::newton_schulz maps each singular value by the quintic and keeps the singular vectors", "[kernels]") {
  // X = P diag(d) Q with P, Q signed permutations: the iterate stays P diag(f(d)) Q, f the scalar
  // quintic x -> a x + b x^3 + c x^5 applied `steps` times to d / |d|.
  const std::vector<double> d = {3.0, 1.0, 0.5, 0.1, 0.02};
  const int64_t n = 5, steps = 5;
  const int64_t p[] = {2, 0, 4, 1, 3}, q[] = {1, 3, 0, 4, 2};
  const double p_sign[] = {1, -1, 1, 1, -1}, q_sign[] = {-1, 1, 1, -1, 1};
  double norm = 0;
  for (double v : d) norm += v * v;
  norm = std::sqrt(norm) + 1e-7;
  std::vector<double> expected_d(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) {
    double s = d[i] / norm;
    for (int64_t k = 0; k < steps; ++k)
      s = cpu::kNewtonSchulzA * s + cpu::kNewtonSchulzB * s * s * s + cpu::kNewtonSchulzC * s * s * s * s * s;
    expected_d[i] = s;
    // What makes the iteration worth its cost: every singular value, from 3 to 0.02 (a ratio of
    // 150), ends near 1.
    CHECK(s > 0.6);
    CHECK(s < 1.25);
  }
  const auto place = [&](const std::vector<double>& diag) {
    std::vector<double> m(static_cast<std::size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) m[p[i] * n + q[i]] = p_sign[i] * q_sign[i] * diag[i];
    return m;
  };
  const std::vector<double> expected = place(expected_d);
  std::vector<double> x = place(d);
  cpu::newton_schulz(x.data(), n, n, steps, 1e-7);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(x[i] == Approx(expected[i]).margin(1e-12));
  std::vector<float> xf = cast_all<float>(place(d));
  cpu::newton_schulz(xf.data(), n, n, steps, 1e-7);
  for (std::size_t i = 0; i < xf.size(); ++i) CHECK(xf[i] == Approx(expected[i]).margin(2e-5));
}

TEMPLATE_TEST_CASE("cpu::newton_schulz equals the plain iteration on wide, tall and square matrices", "[kernels]",
                   float, double) {
  using T = TestType;
  const double tol = std::is_same<T, float>::value ? 2e-4 : 1e-11;
  struct Shape2 {
    int64_t rows, cols;
  };
  for (const Shape2 s : {Shape2{1, 1}, Shape2{1, 7}, Shape2{7, 1}, Shape2{3, 5}, Shape2{16, 16}, Shape2{9, 33},
                         Shape2{33, 9}, Shape2{64, 256}}) {
    INFO("[" << s.rows << ", " << s.cols << "]");
    const std::vector<double> x = random_values(s.rows * s.cols, static_cast<std::uint32_t>(s.rows * 100 + s.cols));
    // The reference takes the Gram matrix on the rows; for a tall X it runs on X^T and transposes
    // back (the kernel works on X^T X instead: the same iterate).
    std::vector<double> expected;
    if (s.rows <= s.cols) {
      expected = newton_schulz_reference(x, s.rows, s.cols, 5);
    } else {
      std::vector<double> xt(x.size());
      for (int64_t i = 0; i < s.rows; ++i)
        for (int64_t j = 0; j < s.cols; ++j) xt[j * s.rows + i] = x[i * s.cols + j];
      const std::vector<double> yt = newton_schulz_reference(xt, s.cols, s.rows, 5);
      expected.resize(x.size());
      for (int64_t i = 0; i < s.rows; ++i)
        for (int64_t j = 0; j < s.cols; ++j) expected[i * s.cols + j] = yt[j * s.rows + i];
    }
    std::vector<T> got = cast_all<T>(x);
    cpu::newton_schulz(got.data(), s.rows, s.cols, 5, 1e-7);
    for (std::size_t i = 0; i < got.size(); ++i)
      REQUIRE(static_cast<double>(got[i]) == Approx(expected[i]).margin(tol));
  }
}

TEMPLATE_TEST_CASE("cpu::muon_step matches the update written out", "[kernels]", float, double) {
  using T = TestType;
  const double tol = std::is_same<T, float>::value ? 1e-6 : 1e-14;
  const int64_t rows = 6, cols = 4;  // tall: the scale is 0.2 sqrt(6)
  for (const bool nesterov : {true, false}) {
    INFO("nesterov " << nesterov);
    ops::MuonHyper h;
    h.lr = 0.01, h.momentum = 0.9, h.weight_decay = 0.1, h.nesterov = nesterov, h.ns_steps = 3;
    const std::vector<double> w0 = random_values(rows * cols, 1), g1 = random_values(rows * cols, 2),
                              g2 = random_values(rows * cols, 3);
    std::vector<T> w = cast_all<T>(w0), m(w.size(), T(0));
    std::vector<double> ew = w0, em(w.size(), 0.0);
    for (const std::vector<double>* g : {&g1, &g2}) {
      std::vector<T> gt = cast_all<T>(*g);
      cpu::muon_step(w.data(), gt.data(), m.data(), rows, cols, h);
      std::vector<double> u(w.size());
      for (std::size_t i = 0; i < u.size(); ++i) {
        em[i] = 0.9 * em[i] + 0.1 * (*g)[i];
        u[i] = nesterov ? 0.1 * (*g)[i] + 0.9 * em[i] : em[i];
      }
      cpu::newton_schulz(u.data(), rows, cols, 3, 1e-7);
      for (std::size_t i = 0; i < u.size(); ++i) ew[i] = ew[i] * (1 - 0.01 * 0.1) - 0.01 * 0.2 * std::sqrt(6.0) * u[i];
      for (std::size_t i = 0; i < w.size(); ++i) {
        REQUIRE(static_cast<double>(m[i]) == Approx(em[i]).margin(tol));
        REQUIRE(static_cast<double>(w[i]) == Approx(ew[i]).margin(tol));
      }
    }
  }
  CHECK(cpu::muon_update_scale(0.5, 3, 200) == Approx(0.5 * 0.2 * std::sqrt(200.0)));
}

TEST_CASE("ops::muon_step refuses what is not a matrix and mismatched state, before writing any", "[ops]") {
  ops::MuonHyper h;
  h.lr = 0.1;
  const auto matrix = [](const Shape& shape, DType dtype, double value) {
    Tensor t = Tensor::zeros(shape, dtype);
    if (dtype == DType::kF32) {
      float* p = t.data<float>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(value + 0.25 * static_cast<double>(i % 5));
    }
    return t;
  };
  const auto good = [&]() {
    return ops::MuonTensors{matrix({4, 3}, DType::kF32, 1), matrix({4, 3}, DType::kF32, -1),
                            matrix({4, 3}, DType::kF32, 0)};
  };
  std::vector<ops::MuonTensors> fine = {good()};
  CHECK_NOTHROW(ops::muon_step(fine, h));
  struct Bad {
    ops::MuonTensors second;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {{matrix({12}, DType::kF32, 1), matrix({12}, DType::kF32, 1), matrix({12}, DType::kF32, 0)}, "must be a matrix"},
      {{matrix({4, 3}, DType::kF32, 1), matrix({3, 4}, DType::kF32, 1), matrix({4, 3}, DType::kF32, 0)},
       "shapes differ"},
      {{matrix({4, 3}, DType::kF32, 1), matrix({4, 3}, DType::kF32, 1), matrix({4, 3}, DType::kF64, 0)},
       "expected F32"},
  };
  for (const Bad& b : bad) {
    INFO(b.message);
    std::vector<ops::MuonTensors> matrices = {good(), b.second};
    const std::vector<float> before = matrices[0].param.to_vector<float>();
    CHECK_THROWS_WITH(ops::muon_step(matrices, h), Catch::Contains(b.message));
    CHECK(matrices[0].param.to_vector<float>() == before);  // the good first matrix untouched
  }
}

TEST_CASE("cpu::muon_steps gives each matrix muon_step's bits at 1 and 2 threads", "[kernels]") {
  struct Shape2 {
    int64_t rows, cols;
  };
  const std::vector<Shape2> shapes = {{16, 16}, {64, 16}, {16, 64}, {8, 8}, {33, 9}};
  std::vector<std::vector<float>> expected;
  ops::MuonHyper h;
  h.lr = 0.05;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const int64_t n = shapes[k].rows * shapes[k].cols;
    std::vector<float> w = cast_all<float>(random_values(n, static_cast<std::uint32_t>(10 + k))), m(n, 0.5f);
    const std::vector<float> g = cast_all<float>(random_values(n, static_cast<std::uint32_t>(20 + k)));
    cpu::muon_step(w.data(), g.data(), m.data(), shapes[k].rows, shapes[k].cols, h);
    expected.push_back(w);
  }
  for (const int threads : {1, 2}) {
    INFO(threads << " threads");
    std::vector<std::vector<float>> w, m, g;
    std::vector<cpu::MuonMatrix<float>> matrices;
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const int64_t n = shapes[k].rows * shapes[k].cols;
      w.push_back(cast_all<float>(random_values(n, static_cast<std::uint32_t>(10 + k))));
      m.emplace_back(n, 0.5f);
      g.push_back(cast_all<float>(random_values(n, static_cast<std::uint32_t>(20 + k))));
    }
    for (std::size_t k = 0; k < shapes.size(); ++k)
      matrices.push_back({w[k].data(), g[k].data(), m[k].data(), shapes[k].rows, shapes[k].cols});
    const test::ScopedThreads scope(threads);
    cpu::muon_steps(matrices, h);
    for (std::size_t k = 0; k < shapes.size(); ++k) CHECK(w[k] == expected[k]);
  }
}

TEST_CASE("optimizer_step: Muon takes the layers' matrices, Adam the rest with its own bits", "[train]") {
  const std::vector<model::ParameterSpec> specs = {
      {"embedding.weight", {10, 4}, model::ParameterInit::kNormal, 0.5},
      {"encoder.0.ffn.w1.weight", {6, 4}, model::ParameterInit::kXavierUniform, 0},
      {"encoder.0.ffn.w1.bias", {6}, model::ParameterInit::kZeros, 0},
      {"encoder.0.norm.gain", {4}, model::ParameterInit::kOnes, 0},
      {"encoder.0.ffn.w2.weight", {4, 6}, model::ParameterInit::kXavierUniform, 0},
      {"output.weight", {10, 4}, model::ParameterInit::kXavierUniform, 0},
  };
  CHECK(!train::muon_updates({specs[0], 0, 40}));
  CHECK(train::muon_updates({specs[1], 40, 24}));
  CHECK(!train::muon_updates({specs[2], 64, 6}));
  CHECK(!train::muon_updates({specs[5], 98, 40}));
  for (const DType compute : {DType::kF32, DType::kBF16}) {
    INFO("compute " << dtype_name(compute));
    model::ParameterSet muon_set(specs, model::ParameterPrecision::training(compute), Device::cpu());
    model::ParameterSet adam_set(specs, model::ParameterPrecision::training(compute), Device::cpu());
    muon_set.initialize(7);
    adam_set.initialize(7);
    const int64_t n = muon_set.size();
    const std::vector<double> g = random_values(n, 11);
    for (model::ParameterSet* set : {&muon_set, &adam_set}) {
      float* grad = set->grads().data<float>();
      for (int64_t i = 0; i < n; ++i) grad[i] = static_cast<float>(g[static_cast<std::size_t>(i)]);
    }
    Tensor m_muon = Tensor::zeros({n}, DType::kF32), v_muon = Tensor::zeros({n}, DType::kF32);
    Tensor m_adam = Tensor::zeros({n}, DType::kF32), v_adam = Tensor::zeros({n}, DType::kF32);
    ops::AdamHyper adam;
    adam.lr = 0.01;
    ops::MuonHyper muon;
    muon.lr = 0.02;
    const std::vector<float> before = muon_set.values().to_vector<float>();
    train::optimizer_step(muon_set, m_muon, v_muon, adam, &muon);
    train::optimizer_step(adam_set, m_adam, v_adam, adam, nullptr);
    const std::vector<float> w_muon = muon_set.values().to_vector<float>(),
                             w_adam = adam_set.values().to_vector<float>();
    const std::vector<float> vm = v_muon.to_vector<float>();
    for (const model::ParameterEntry& e : muon_set.entries()) {
      INFO(e.spec.name);
      if (train::muon_updates(e)) {
        // The slice equals cpu::muon_step on it alone, and Adam's second moment stays untouched.
        std::vector<float> w(before.begin() + e.offset, before.begin() + e.offset + e.numel), m(e.numel, 0.0f);
        const std::vector<float> gs(g.begin() + e.offset, g.begin() + e.offset + e.numel);
        cpu::muon_step(w.data(), gs.data(), m.data(), e.spec.shape[0], e.spec.shape[1], muon);
        for (int64_t i = 0; i < e.numel; ++i) {
          REQUIRE(w_muon[e.offset + i] == w[i]);
          REQUIRE(vm[e.offset + i] == 0.0f);
        }
        CHECK(!std::equal(w.begin(), w.end(), w_adam.begin() + e.offset));
      } else {
        for (int64_t i = 0; i < e.numel; ++i) REQUIRE(w_muon[e.offset + i] == w_adam[e.offset + i]);
      }
    }
    if (compute == DType::kBF16) {  // the mirror is the masters rounded once
      CHECK(muon_set.compute_values().to(DType::kF32).to_vector<float>() ==
            muon_set.values().to(DType::kBF16).to(DType::kF32).to_vector<float>());
    }
  }
}

}  // namespace dragoman
