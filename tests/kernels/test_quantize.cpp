// int8 linear layers (kernels/cpu/quantize.h): the per-row quantization round trip (8 and 7 bits),
// the fast path (oneDNN's s8s8s32 GEMM where the build has it) equal to the plain-loop spec bit for
// bit, on random rows and on the rows that saturate a 16-bit pair sum, and the weights' bits chosen
// by oneDNN's ISA. CI runs these again with ONEDNN_MAX_CPU_ISA=AVX2 and AVX512_CORE (no VNNI).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "device/cpu/threads.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/cpu/quantize.h"

namespace dragoman {

TEST_CASE("quantize_rows: per-row scales, every value within half a step, all-zero rows", "[kernels]") {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-3, 3);
  const std::int64_t rows = 5, cols = 37;
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (float& v : x) v = u(rng);
  for (std::int64_t j = 0; j < cols; ++j) x[static_cast<std::size_t>(2 * cols + j)] = 0.0f;  // row 2: zeros
  for (const int max_q : {127, 63}) {
    INFO("max_q = " << max_q);
    std::vector<std::int8_t> q(x.size());
    std::vector<float> scales(static_cast<std::size_t>(rows));
    cpu::quantize_rows(x.data(), rows, cols, q.data(), scales.data(), max_q);
    CHECK(scales[2] == 1.0f);
    int widest = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      float largest = 0;
      for (std::int64_t j = 0; j < cols; ++j)
        largest = std::max(largest, std::abs(x[static_cast<std::size_t>(r * cols + j)]));
      if (r != 2) CHECK(scales[static_cast<std::size_t>(r)] == largest / static_cast<float>(max_q));
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t at = static_cast<std::size_t>(r * cols + j);
        CHECK(std::abs(static_cast<int>(q[at])) <= max_q);
        widest = std::max(widest, std::abs(static_cast<int>(q[at])));
        CHECK(std::abs(q[at] * scales[static_cast<std::size_t>(r)] - x[at]) <=
              0.5f * scales[static_cast<std::size_t>(r)] * 1.0001f);
      }
    }
    CHECK(widest == max_q);  // each row's largest value is the top of the range
  }
  std::vector<std::int8_t> q(x.size());
  std::vector<float> scales(static_cast<std::size_t>(rows));
  CHECK_THROWS_WITH(cpu::quantize_rows(x.data(), rows, cols, q.data(), scales.data(), 128),
                    Catch::Contains("max_q must be in [1, 127]"));
}

TEST_CASE("int8_weight_max: 8-bit weights only where oneDNN's int8 kernels have VNNI", "[kernels]") {
  const std::string isa = cpu::onednn_isa_name();
  INFO("oneDNN's ISA: " << isa << "; " << cpu::int8_summary());
#ifdef DRAGOMAN_WITH_ONEDNN
  const bool vnni = isa == "avx512_core_vnni" || isa == "avx512_core_bf16" || isa == "avx512_core_amx";
  CHECK(cpu::int8_weight_max() == (vnni ? 127 : 63));
  CHECK(cpu::int8_summary().find(vnni ? "8-bit" : "7-bit") == 0);
#else
  CHECK(isa == "none");
  CHECK(cpu::int8_weight_max() == 127);
#endif
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
      cpu::quantize_weights(w.data(), s.out, s.in, qw.data(), sw.data());
      std::vector<float> spec(static_cast<std::size_t>(s.rows * s.out));
      cpu::linear_int8_reference(x.data(), s.rows, s.in, qw.data(), sw.data(), s.out, bias.data(), relu, spec.data());
      for (const int threads : {1, 2}) {  // the fast path's buffers are the caller's, its loops OpenMP's
        cpu::use_compute_threads_here(threads);
        std::vector<float> fast(spec.size());
        cpu::linear_int8(x.data(), s.rows, s.in, qw.data(), sw.data(), s.out, bias.data(), relu, fast.data());
        CHECK(fast == spec);
      }
      cpu::use_compute_threads_here(1);
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

TEST_CASE("linear_int8: rows that saturate a 16-bit pair sum still give the spec's bits", "[kernels]") {
  // The worst case of the u8 x s8 pair sums (quantize.h): every activation at the top or the bottom
  // of its range (128 + 127 = 255 after oneDNN's shift), every weight at its row's largest |q|, with
  // the sign of its activation, so each pair adds 2 * 255 * max_q. With 8-bit weights on a CPU
  // without VNNI this clips (the test fails there); with the weights int8_weight_max() gives it is
  // exact.
  const std::int64_t rows = 3, in = 256, out = 40;
  std::vector<float> x(static_cast<std::size_t>(rows * in)), w(static_cast<std::size_t>(out * in));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < in; ++k) x[static_cast<std::size_t>(r * in + k)] = (k + r) % 3 == 0 ? -2.0f : 2.0f;
  }
  for (std::int64_t j = 0; j < out; ++j) {
    for (std::int64_t k = 0; k < in; ++k) {
      const float sign = (k % 3 == 0) == (j % 2 == 0) ? -1.0f : 1.0f;
      w[static_cast<std::size_t>(j * in + k)] = sign * (j % 5 == 0 ? 0.05f : 0.1f + 0.001f * static_cast<float>(k % 7));
    }
  }
  std::vector<std::int8_t> qw(w.size());
  std::vector<float> sw(static_cast<std::size_t>(out));
  cpu::quantize_weights(w.data(), out, in, qw.data(), sw.data());
  std::vector<float> spec(static_cast<std::size_t>(rows * out)), fast(spec.size());
  cpu::linear_int8_reference(x.data(), rows, in, qw.data(), sw.data(), out, nullptr, false, spec.data());
  cpu::linear_int8(x.data(), rows, in, qw.data(), sw.data(), out, nullptr, false, fast.data());
  CHECK(fast == spec);
  const auto packed = cpu::PackedWeights::pack_s8(qw.data(), out, in);
  if (packed) {
    cpu::linear_int8(x.data(), rows, in, nullptr, sw.data(), out, nullptr, false, fast.data(), packed.get());
    CHECK(fast == spec);
  }
}

}  // namespace dragoman
