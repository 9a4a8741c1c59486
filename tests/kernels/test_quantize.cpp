// int8 linear layers (kernels/cpu/quantize.h): the per-row quantization round trip, and the fast
// path (oneDNN's s8s8s32 GEMM where the build has it) equal to the plain-loop spec bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/threads.h"
#include "kernels/cpu/quantize.h"

namespace dragoman {

TEST_CASE("quantize_rows: per-row scales, every value within half a step, all-zero rows", "[kernels]") {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-3, 3);
  const std::int64_t rows = 5, cols = 37;
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (float& v : x) v = u(rng);
  for (std::int64_t j = 0; j < cols; ++j) x[static_cast<std::size_t>(2 * cols + j)] = 0.0f;  // row 2: zeros
  std::vector<std::int8_t> q(x.size());
  std::vector<float> scales(static_cast<std::size_t>(rows));
  cpu::quantize_rows(x.data(), rows, cols, q.data(), scales.data());
  CHECK(scales[2] == 1.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    float largest = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      largest = std::max(largest, std::abs(x[static_cast<std::size_t>(r * cols + j)]));
    if (r != 2) CHECK(scales[static_cast<std::size_t>(r)] == largest / 127.0f);
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t at = static_cast<std::size_t>(r * cols + j);
      CHECK(q[at] >= -127);
      CHECK(std::abs(q[at] * scales[static_cast<std::size_t>(r)] - x[at]) <=
            0.5f * scales[static_cast<std::size_t>(r)] * 1.0001f);
    }
  }
}

TEST_CASE("linear_int8 equals its plain-loop spec bit for bit, and approximates the f32 product", "[kernels]") {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1, 1);
  struct Shape {
    std::int64_t rows, in, out;
  };
  for (const Shape s : {Shape{1, 7, 3}, Shape{4, 512, 512}, Shape{33, 64, 2048}, Shape{3, 2048, 37}}) {
    for (const bool relu : {false, true}) {
      INFO(s.rows << " x " << s.in << " -> " << s.out << (relu ? " relu" : ""));
      std::vector<float> x(static_cast<std::size_t>(s.rows * s.in)), w(static_cast<std::size_t>(s.out * s.in)),
          bias(static_cast<std::size_t>(s.out));
      for (float& v : x) v = u(rng);
      for (float& v : w) v = u(rng) * 0.1f;
      for (float& v : bias) v = u(rng);
      std::vector<std::int8_t> qw(w.size());
      std::vector<float> sw(static_cast<std::size_t>(s.out));
      cpu::quantize_rows(w.data(), s.out, s.in, qw.data(), sw.data());
      std::vector<float> spec(static_cast<std::size_t>(s.rows * s.out));
      cpu::linear_int8_reference(x.data(), s.rows, s.in, qw.data(), sw.data(), s.out, bias.data(), relu, spec.data());
      for (const int threads : {1, 2}) {  // the fast path's buffers are the caller's, its loops OpenMP's
        use_compute_threads_here(threads);
        std::vector<float> fast(spec.size());
        cpu::linear_int8(x.data(), s.rows, s.in, qw.data(), sw.data(), s.out, bias.data(), relu, fast.data());
        CHECK(fast == spec);
      }
      use_compute_threads_here(1);
      // Against the f32 product: each of the `in` terms is off by at most half a step of x's and of
      // w's scale (and their product), so the error is a small fraction of sum |x| |w|.
      double worst = 0;
      for (std::int64_t r = 0; r < s.rows; ++r) {
        for (std::int64_t j = 0; j < s.out; ++j) {
          double exact = bias[static_cast<std::size_t>(j)], magnitude = 0;
          for (std::int64_t k = 0; k < s.in; ++k) {
            const double term = static_cast<double>(x[static_cast<std::size_t>(r * s.in + k)]) *
                                w[static_cast<std::size_t>(j * s.in + k)];
            exact += term;
            magnitude += std::abs(term);
          }
          if (relu) exact = std::max(exact, 0.0);
          worst = std::max(worst, std::abs(spec[static_cast<std::size_t>(r * s.out + j)] - exact) / (magnitude + 1e-6));
        }
      }
      CHECK(worst < 0.05);
    }
  }
  std::vector<float> y(3);
  std::vector<std::int8_t> qw(3);
  std::vector<float> x(1), sw(3, 1.0f);
  CHECK_NOTHROW(cpu::linear_int8(x.data(), 1, 1, qw.data(), sw.data(), 3, nullptr, false, y.data()));
}

}  // namespace dragoman
