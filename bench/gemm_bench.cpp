// Benchmark: the CPU products of decoding, y = x W^T for x [m, k] and weights W [n, k], on one
// thread (or --threads), through each path translate can take: OpenBLAS's cblas_sgemm, cpu::gemm
// (oneDNN's dnnl_sgemm where the build has oneDNN), cpu::PackedWeights (oneDNN's matmul on weights
// packed once), and int8: cpu::linear_int8 unpacked (dnnl_gemm_s8s8s32) and packed, both with the
// row quantization and scaling back included. Prints a Markdown table of GFLOP/s (2 m n k per
// product), the best of --windows windows of about 50 ms each.
//
//   gemm_bench [--shapes 4x512x512,64x37000x512] [--threads 1] [--windows 7]

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "best_rate.h"
#include "device/cpu/threads.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/cpu/quantize.h"
#include "kernels/gemm.h"
#include "ops/build_info.h"

namespace {

struct Shape {
  std::int64_t m, n, k;
};

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: gemm_bench [--shapes MxNxK,...] [--threads T] [--windows W]\n");
  std::exit(2);
}

std::vector<Shape> parse_shapes(const std::string& list) {
  std::vector<Shape> shapes;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    Shape s{};
    char x1 = 0, x2 = 0;
    std::stringstream one(item);
    if (!(one >> s.m >> x1 >> s.n >> x2 >> s.k) || x1 != 'x' || x2 != 'x' || s.m < 1 || s.n < 1 || s.k < 1) usage();
    shapes.push_back(s);
  }
  return shapes;
}

// GFLOP/s of `run`: the best of `windows` windows, each as many runs as fit in about 50 ms.
double measure(const Shape& s, int windows, const std::function<void()>& run) {
  const double flop = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  return dragoman::bench::best_rate(flop, windows, 0.05, run) * 1e-9;
}

std::string cell(double gflops) {
  if (gflops <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", gflops);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Shape> shapes = parse_shapes(
      "1x512x512,4x512x512,8x512x512,64x512x512,64x1536x512,64x2048x512,64x512x2048,256x512x512,1x37000x512,"
      "4x37000x512,64x37000x512,256x37000x512");
  int threads = 1, windows = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage();
    const std::string value = argv[++i];
    if (arg == "--shapes") {
      shapes = parse_shapes(value);
    } else if (arg == "--threads") {
      threads = std::atoi(value.c_str());
    } else if (arg == "--windows") {
      windows = std::atoi(value.c_str());
    } else {
      usage();
    }
  }
  if (threads < 1 || windows < 1) usage();
  dragoman::cpu::set_compute_threads(threads);

  std::printf("%s\n", dragoman::ops::cpu_kernels_info().c_str());
  std::printf(
      "y = x W^T, x [m, k], W [n, k], f32 (int8: rows quantized, products in int32, scaled back); %d "
      "thread(s); GFLOP/s, the best of %d windows of about 50 ms\n\n",
      threads, windows);
  std::printf("| m x n x k | OpenBLAS sgemm | cpu::gemm | packed f32 | int8 | packed int8 |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (const Shape& s : shapes) {
    std::vector<float> x(static_cast<std::size_t>(s.m * s.k)), w(static_cast<std::size_t>(s.n * s.k)),
        y(static_cast<std::size_t>(s.m * s.n));
    for (float& v : x) v = uniform(rng);
    for (float& v : w) v = uniform(rng);
    std::vector<std::int8_t> qw(w.size());
    std::vector<float> sw(static_cast<std::size_t>(s.n));
    dragoman::cpu::quantize_weights(w.data(), s.n, s.k, qw.data(), sw.data());
    const auto packed = dragoman::cpu::PackedWeights::pack_f32(w.data(), s.n, s.k);
    const auto packed_s8 = dragoman::cpu::PackedWeights::pack_s8(qw.data(), s.n, s.k);
    const auto m = static_cast<blasint>(s.m), n = static_cast<blasint>(s.n), k = static_cast<blasint>(s.k);
    const double openblas = measure(s, windows, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x.data(), k, w.data(), k, 0.0f, y.data(), n);
    });
    const double gemm = measure(s, windows, [&] {
      dragoman::cpu::gemm<float, float>(false, true, s.m, s.n, s.k, 1, x.data(), s.k, w.data(), s.k, 0, y.data(), s.n);
    });
    const double packed_f32 =
        packed ? measure(s, windows, [&] { packed->linear_f32(x.data(), s.m, s.k, nullptr, false, y.data()); }) : 0;
    const double int8 = measure(s, windows, [&] {
      dragoman::cpu::linear_int8(x.data(), s.m, s.k, qw.data(), sw.data(), s.n, nullptr, false, y.data());
    });
    const double packed_int8 = packed_s8
                                   ? measure(s, windows,
                                             [&] {
                                               dragoman::cpu::linear_int8(x.data(), s.m, s.k, qw.data(), sw.data(), s.n,
                                                                          nullptr, false, y.data(), packed_s8.get());
                                             })
                                   : 0;
    std::printf("| %lld x %lld x %lld | %s | %s | %s | %s | %s |\n", static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), cell(openblas).c_str(), cell(gemm).c_str(),
                cell(packed_f32).c_str(), cell(int8).c_str(), cell(packed_int8).c_str());
  }
  std::printf("\n(-: not packed in this build or on this CPU)\n");
  return 0;
}
