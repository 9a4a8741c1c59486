// log_softmax_, cross_entropy_ and cross_entropy_fused_ on a GPU (kernels/cross_entropy.h)
// against the CPU ops of the same dtype: f32, bf16, f16; V = 1, 7, 31, 32, 33, 255, 513, 1025 and a
// 32000-wide vocabulary; pad rows and label smoothing; the gradient scaled in the kernel; device
// targets; the device sums tensor.
//
// Tolerance: both compute a row in float and round each element once, but the CPU adds a row's V
// exponentials one by one while the GPU adds them in a tree, so the two log-sum-exps differ by a float
// summation error, about sqrt(V) eps_f32 (bounded here by 8 sqrt(V) eps_f32 + 4 eps_f32 (|max| +
// log V), which also covers expf/logf's last bits), and every log-probability of the row moves with
// it. So an element may differ by that plus one unit in the last place of its dtype; for bf16 and f16
// that unit dominates (1 ulp), for f32 with wide rows the log-sum-exp term does. The sums move by the
// same log-sum-exp difference per non-pad row. The output is written into the first N rows of an
// [N + 1, V] buffer and the sums into the first two of three doubles: the rest must be unchanged.
// Repeated GPU runs give the same bits (fixed reduction trees, no atomics).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "op_parity.h"
#include "ops/cross_entropy.h"
#include "parity_testing.h"

namespace dragoman {
namespace {

using parity::kGpu;

constexpr std::int32_t kPad = 1;
constexpr float kScale = 4.0f;  // logits in [-4, 4]

// Targets in [0, V) with every fourth row pad (when V > 1 leaves room for it).
Tensor random_targets(std::int64_t rows, std::int64_t v, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> id(0, static_cast<std::int32_t>(v - 1));
  std::vector<std::int32_t> t(static_cast<std::size_t>(rows));
  for (std::size_t r = 0; r < t.size(); ++r) t[r] = (r % 4 == 3 && v > kPad) ? kPad : id(rng);
  return Tensor::from_vector(t, {rows});
}

// The bound on |log-sum-exp(GPU) - log-sum-exp(CPU)| of a row of V logits in [-kScale, kScale].
double log_z_tolerance(std::int64_t v) {
  const double vd = static_cast<double>(v);
  return parity::kEpsF32 * (8 * std::sqrt(vd) + 4 * (kScale + std::log(vd)));
}

enum class Kind { kLogSoftmax, kForward, kFused, kFusedScaled };

constexpr double kGradScale = 1024.0 / 37.0;  // kFusedScaled: a loss scale over 37 target tokens

// Runs one kind on the GPU (in rows [0, N) of an [N + 1, V] buffer, sums in [0, 2) of three doubles)
// and on the CPU, and compares.
template <typename T>
void check_cross_entropy(Kind kind, std::int64_t rows, std::int64_t v, double smoothing, std::uint32_t seed) {
  const DType dt = dtype_of<T>();
  INFO("kind=" << static_cast<int>(kind) << " rows=" << rows << " V=" << v << " T=" << dtype_name(dt)
               << " smoothing=" << smoothing);
  const Tensor buffer = parity::random_tensor({rows + 1, v}, dt, seed, kScale);
  const Tensor targets = random_targets(rows, v, seed + 1);
  const std::vector<double> sums_before = {0.25, -1.5, 777.0};

  Tensor expected = buffer.narrow(0, 0, rows).clone();  // [N, V]
  Tensor cpu_sums = Tensor::from_vector(std::vector<double>{sums_before[0], sums_before[1]}, {2});
  const auto run = [&](Tensor& logits, const Tensor& ids, Tensor& sums) {
    switch (kind) {
      case Kind::kLogSoftmax: ops::log_softmax_(logits); break;
      case Kind::kForward: ops::cross_entropy_(logits, ids, kPad, smoothing, sums); break;
      case Kind::kFused: ops::cross_entropy_fused_(logits, ids, kPad, smoothing, sums); break;
      case Kind::kFusedScaled: ops::cross_entropy_fused_(logits, ids, kPad, smoothing, sums, kGradScale); break;
    }
  };
  run(expected, targets, cpu_sums);

  const Tensor gtargets = targets.to(kGpu);
  const auto run_gpu = [&](Tensor& gbuffer, Tensor& gsums_buffer) {
    gbuffer = buffer.to(kGpu);
    gsums_buffer = Tensor::from_vector(sums_before, {3}).to(kGpu);
    Tensor logits = gbuffer.narrow(0, 0, rows), sums = gsums_buffer.narrow(0, 0, 2);
    run(logits, gtargets, sums);
  };
  Tensor gbuffer, gsums;
  run_gpu(gbuffer, gsums);

  // Elements, within the log-sum-exp term plus one unit of T (see the top).
  const std::vector<double> got = parity::as_doubles(gbuffer), ref = parity::as_doubles(expected);
  const double tol_z = log_z_tolerance(v);
  const double gradient_scale = kind == Kind::kFusedScaled ? kGradScale : 1.0;  // scales the log-sum-exp term
  const auto tolerance = [&](std::size_t i) {
    return tol_z * gradient_scale + parity::ulp(ref[i], dt) + parity::ulp(ref[i], DType::kF32);
  };
  const std::vector<double> got_rows(got.begin(), got.begin() + rows * v);
  test::check_close(got_rows, ref, tolerance, "values");
  // The sentinel row, bit for bit.
  const Tensor host = gbuffer.to(Device::cpu());
  const std::size_t row_bytes = static_cast<std::size_t>(v) * dtype_size(dt);
  CHECK(std::memcmp(static_cast<const unsigned char*>(host.raw_data()) + rows * row_bytes,
                    static_cast<const unsigned char*>(buffer.raw_data()) + rows * row_bytes, row_bytes) == 0);

  // Sums: the same log-sum-exp difference per non-pad row; the third double untouched.
  const std::vector<double> s = gsums.to(Device::cpu()).to_vector<double>(), s_ref = cpu_sums.to_vector<double>();
  CHECK(s[2] == 777.0);
  if (kind != Kind::kLogSoftmax) {
    const std::vector<std::int32_t> ids = targets.to_vector<std::int32_t>();
    const auto real =
        static_cast<double>(std::count_if(ids.begin(), ids.end(), [](std::int32_t y) { return y != kPad; }));
    const double sum_tol = real * 1.5 * (tol_z + 4 * parity::kEpsF32 * (kScale + std::log(double(v))));
    for (int i = 0; i < 2; ++i) {
      INFO("sum " << i << ": got " << s[i] << ", expected " << s_ref[i]);
      CHECK(std::abs(s[i] - s_ref[i]) <= sum_tol + 1e-12 * std::abs(s_ref[i]));
    }
  } else {
    CHECK(s[0] == sums_before[0]);
    CHECK(s[1] == sums_before[1]);
  }

  // Determinism: a second run gives the same bits, values and sums.
  Tensor again, again_sums;
  run_gpu(again, again_sums);
  CHECK(parity::as_doubles(again) == got);
  CHECK(again_sums.to(Device::cpu()).to_vector<double>() == s);
}

}  // namespace

TEST_CASE("Cross-entropy on a GPU matches the CPU (f32, bf16, f16; awkward V; 32000-wide rows)",
          "[cuda][cross_entropy]") {
  std::uint32_t seed = 500;
  for (const std::int64_t v : {1, 7, 31, 32, 33, 255, 513, 1025, 32000}) {
    const std::int64_t rows = v >= 32000 ? 9 : 33;
    for (const Kind kind : {Kind::kLogSoftmax, Kind::kForward, Kind::kFused, Kind::kFusedScaled}) {
      for (const double smoothing : {0.0, 0.1}) {
        check_cross_entropy<float>(kind, rows, v, smoothing, seed += 2);
        check_cross_entropy<bf16>(kind, rows, v, smoothing, seed += 2);
        check_cross_entropy<f16>(kind, rows, v, smoothing, seed += 2);
      }
    }
  }
}

TEST_CASE("Cross-entropy on a GPU: targets on the logits' device; f64 is a clear error", "[cuda][cross_entropy]") {
  Tensor logits = Tensor::zeros({2, 5}, DType::kF32, kGpu);
  Tensor sums = Tensor::zeros({2}, DType::kF64, kGpu);
  const Tensor host_targets = Tensor::from_vector(std::vector<std::int32_t>{0, 2}, {2});
  CHECK_THROWS_WITH(ops::cross_entropy_(logits, host_targets, kPad, 0.1, sums),
                    Catch::Contains("targets must be a contiguous i32 [N] tensor on cuda:0"));
  Tensor logits64 = Tensor::zeros({2, 5}, DType::kF64, kGpu);
  CHECK_THROWS_WITH(ops::cross_entropy_(logits64, host_targets.to(kGpu), kPad, 0.1, sums),
                    Catch::Contains("f64 has no CUDA kernels"));
  // The read-back form works on a GPU too: uniform logits give log 5 per non-pad row.
  const ops::CrossEntropySums read = ops::cross_entropy_(logits, host_targets.to(kGpu), kPad, 0.0);
  CHECK(read.nll == Approx(2 * std::log(5.0)).epsilon(1e-6));
}

}  // namespace dragoman
