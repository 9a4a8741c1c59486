// Benchmark: Dragoman's f32 row kernels (kernels/cpu/vector_math.h) at every instruction-set level
// this CPU can run (AVX-512, AVX2, the baseline), one thread. Prints a Markdown table of millions
// of elements per second for each kernel at each level, the best of --windows windows of about
// 20 ms each, so that a level running scalar code shows at once: the AVX2 column should be about
// half the AVX-512 one and twice the baseline's for the exp kernels. Rows are the sizes decoding
// meets: a vocabulary row (sum_exp, exp_store, max, subtract: log-softmax and top-k), attention's
// scores and head-sized rows (scaled_dots, add_weighted_rows over 64 keys of 64 floats) and int8's
// rows (max_abs, quantize_row, dequantize_row over 512 and 2,048); and Adam over 65,536 parameters, beside
// the scalar loop it replaced.
//
//   vector_bench [--windows 7] [--vocabulary 37000]

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "best_rate.h"
#include "device/cpu/cpu_isa.h"
#include "kernels/common/adam.h"
#include "kernels/cpu/vector_math.h"
#include "ops/build_info.h"

namespace {

using dragoman::cpu::CpuIsa;
using dragoman::cpu::VectorKernels;

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: vector_bench [--windows W] [--vocabulary V]\n");
  std::exit(2);
}

// Millions of elements per second of `run` (which handles `elements` elements): the best of
// `windows` windows, each as many runs as fit in about 20 ms.
double measure(double elements, int windows, const std::function<void()>& run) {
  return dragoman::bench::best_rate(elements, windows, 0.02, run) * 1e-6;
}

volatile float sink;  // keeps the results alive

}  // namespace

int main(int argc, char** argv) {
  int windows = 7;
  std::int64_t vocabulary = 37000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage();
    const std::string value = argv[++i];
    if (arg == "--windows") {
      windows = std::atoi(value.c_str());
    } else if (arg == "--vocabulary") {
      vocabulary = std::atoll(value.c_str());
    } else {
      usage();
    }
  }
  if (windows < 1 || vocabulary < 1) usage();

  std::vector<const VectorKernels*> levels;
  for (const CpuIsa isa : {CpuIsa::avx512, CpuIsa::avx2, CpuIsa::baseline}) {
    if (dragoman::cpu::cpu_supports(isa)) levels.push_back(&dragoman::cpu::vector_kernels(isa));
  }

  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 3);
  const auto row = [&](std::int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = normal(rng);
    return v;
  };
  const std::int64_t keys = 64, head = 64;
  const std::vector<float> logits = row(vocabulary), q = row(head), kv = row(keys * head), p = row(keys);
  const std::vector<float> activations = row(2048), scales = row(2048), bias = row(2048);
  std::vector<float> out(static_cast<std::size_t>(std::max<std::int64_t>(vocabulary, 2048)));
  std::vector<std::int8_t> q8(2048);
  std::vector<std::int32_t> products(2048);
  for (std::size_t j = 0; j < products.size(); ++j) products[j] = static_cast<std::int32_t>(j * 7919 % 40001) - 20000;

  // Adam over 65,536 f32 parameters (a training step's share of one thread); the step's scalars.
  const std::int64_t parameters = 65536;
  std::vector<float> adam_param = row(parameters), adam_grad = row(parameters), adam_m(parameters), adam_v(parameters);
  const dragoman::common::AdamScalars<float> adam = dragoman::common::adam_scalars<float>(1e-3, 0.9, 0.98, 1e-9, 0, 10);

  struct Row {
    std::string name;
    double elements;
    std::function<void(const VectorKernels&)> run;
  };
  const double v = static_cast<double>(vocabulary);
  const std::vector<Row> rows = {
      {"sum_exp_f32 (" + std::to_string(vocabulary) + ")", v,
       [&](const VectorKernels& k) { sink = k.sum_exp_f32(logits.data(), vocabulary, 4.0f); }},
      {"exp_store_f32 (" + std::to_string(vocabulary) + ")", v,
       [&](const VectorKernels& k) { sink = k.exp_store_f32(logits.data(), vocabulary, 4.0f, out.data()); }},
      {"max_f32 (" + std::to_string(vocabulary) + ")", v,
       [&](const VectorKernels& k) { sink = k.max_f32(logits.data(), vocabulary); }},
      {"subtract_f32 (" + std::to_string(vocabulary) + ")", v,
       [&](const VectorKernels& k) {
         k.subtract_f32(out.data(), vocabulary, 0.0f);
         sink = out[0];
       }},
      {"dot_f32 (" + std::to_string(vocabulary) + ")", v,
       [&](const VectorKernels& k) { sink = k.dot_f32(logits.data(), out.data(), vocabulary); }},
      {"scaled_dots_f32 (64 keys x 64)", static_cast<double>(keys * head),
       [&](const VectorKernels& k) {
         sink = k.scaled_dots_f32(q.data(), kv.data(), head, keys, head, 0.125f, out.data());
       }},
      {"add_weighted_rows_f32 (64 rows x 64)", static_cast<double>(keys * head),
       [&](const VectorKernels& k) {
         k.add_weighted_rows_f32(p.data(), kv.data(), head, keys, head, out.data());
         sink = out[0];
       }},
      {"max_abs_f32 (512)", 512, [&](const VectorKernels& k) { sink = k.max_abs_f32(activations.data(), 512); }},
      {"quantize_row_f32 (512)", 512,
       [&](const VectorKernels& k) {
         k.quantize_row_f32(activations.data(), 512, 0.1f, 127.0f, q8.data());
         sink = q8[0];
       }},
      {"dequantize_row_f32 (2048, bias, relu)", 2048,
       [&](const VectorKernels& k) {
         k.dequantize_row_f32(products.data(), 1e-3f, scales.data(), 2048, bias.data(), true, out.data());
         sink = out[0];
       }},
      {"adam_f32 (65536 parameters)", static_cast<double>(parameters),
       [&](const VectorKernels& k) {
         k.adam_f32(adam_param.data(), adam_grad.data(), adam_m.data(), adam_v.data(), parameters, adam);
         sink = adam_param[0];
       }},
  };

  std::printf("%s", dragoman::ops::cpu_kernels_info().c_str());
  std::printf("\nf32 row kernels, 1 thread: millions of elements per second, the best of %d windows of about 20 ms\n\n",
              windows);
  std::string header = "| kernel (row size) |", rule = "|---|";
  for (const VectorKernels* k : levels) {
    header += std::string(" ") + dragoman::cpu::cpu_isa_name(k->isa) + " |";
    rule += "---:|";
  }
  std::printf("%s\n%s\n", header.c_str(), rule.c_str());
  for (const Row& r : rows) {
    std::string line = "| " + r.name + " |";
    for (const VectorKernels* k : levels) {
      char cell[32];
      std::snprintf(cell, sizeof cell, " %.0f |", measure(r.elements, windows, [&] { r.run(*k); }));
      line += cell;
    }
    std::printf("%s\n", line.c_str());
  }
  // What adam_f32 replaced: common::adam_update one element at a time (the baseline's code).
  const double scalar_adam = measure(static_cast<double>(parameters), windows, [&] {
    for (std::int64_t i = 0; i < parameters; ++i) {
      adam_param[i] = dragoman::common::adam_update(adam_param[i], adam_grad[i], adam_m[i], adam_v[i], adam);
    }
    sink = adam_param[0];
  });
  std::printf("\nadam: the scalar loop of common::adam_update it replaced: %.0f million parameters/s\n", scalar_adam);
  return 0;
}
