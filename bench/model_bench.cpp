// Benchmark: one training step (forward + backward + Adam) of the paper's base and big models on
// the CPU (at each thread count) or a GPU (--device cuda:N), for a batch of about --tokens source
// and --tokens target tokens. Prints a Markdown table: milliseconds per phase (a GPU phase ends with
// a device synchronisation), target tokens per second, the device allocator's peak and the
// process's peak resident memory; on a GPU also the model's TFLOP/s (bench/model_flops.h: the
// matrix products' work) and its share of the GPU's dense peak (MFU), where the GPU is known.
//
//   model_bench [--models base,big] [--tokens 4000] [--length 25] [--vocab 37000]
//               [--threads 1,2] [--steps 2] [--precision fp32,bf16,fp16] [--device cpu|cuda:N]

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "base/philox.h"
#include "core/allocator.h"
#include "device/cpu/threads.h"
#include "device/cuda/context.h"
#include "device/cuda/runtime_info.h"
#include "model/transformer.h"
#include "model_flops.h"
#include "ops/adam.h"
#include "ops/build_info.h"

namespace {

using dragoman::Tensor;
using dragoman::model::Batch;
using dragoman::model::ModelConfig;

struct Options {
  std::vector<std::string> models{"base", "big"};
  std::int64_t tokens = 4000;
  std::int64_t length = 25;  // source and target length (the target counts its EOS)
  std::int64_t vocab = 37000;
  std::vector<int> threads{1, 2};
  int steps = 2;
  std::vector<std::string> precisions{"fp32"};
  dragoman::Device device = dragoman::Device::cpu();
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: model_bench [--models base,big] [--tokens N] [--length L] [--vocab V] [--threads 1,2] "
               "[--steps S] [--precision fp32,bf16,fp16] [--device cpu|cuda:N]\n");
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage();
    const std::string value = argv[++i];
    if (flag == "--models") {
      o.models = split(value);
    } else if (flag == "--tokens") {
      o.tokens = std::stoll(value);
    } else if (flag == "--length") {
      o.length = std::stoll(value);
    } else if (flag == "--vocab") {
      o.vocab = std::stoll(value);
    } else if (flag == "--threads") {
      o.threads.clear();
      for (const std::string& t : split(value)) o.threads.push_back(std::stoi(t));
    } else if (flag == "--steps") {
      o.steps = std::stoi(value);
    } else if (flag == "--precision") {
      o.precisions = split(value);
    } else if (flag == "--device") {
      o.device = dragoman::Device::parse(value);
    } else {
      usage();
    }
  }
  if (o.tokens < o.length || o.length < 2 || o.vocab < 8 || o.steps < 1 || o.threads.empty()) usage();
  for (const std::string& p : o.precisions) {
    dragoman::DType dtype;
    if (!dragoman::parse_precision(p, dtype)) usage();
  }
  return o;
}

// B sentences of `length` random ids on both sides (the target's last position is its EOS).
Batch random_batch(const ModelConfig& config, std::int64_t sentences, std::int64_t length) {
  std::vector<std::vector<std::int32_t>> src(sentences), tgt(sentences);
  for (std::int64_t b = 0; b < sentences; ++b) {
    for (std::int64_t t = 0; t < length; ++t) {
      const auto draw = [&](std::uint64_t stream) {
        return static_cast<std::int32_t>(4 + dragoman::philox::bits(7, stream, b * length + t) %
                                                 (config.src_vocab_size - 4));
      };
      src[b].push_back(draw(0));
      if (t + 1 < length) tgt[b].push_back(draw(1));
    }
  }
  return Batch::from_sentences(src, tgt, config);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

}  // namespace

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::int64_t sentences = o.tokens / o.length;
  std::printf("%s\n", dragoman::ops::cpu_kernels_info().c_str());
  std::printf(
      "Training step on %s: %lld sentences x %lld tokens (%lld source + %lld target tokens), vocabulary %lld, "
      "dropout on; median of %d steps after one warm-up step\n\n",
      o.device.str().c_str(), static_cast<long long>(sentences), static_cast<long long>(o.length),
      static_cast<long long>(sentences * o.length), static_cast<long long>(sentences * o.length),
      static_cast<long long>(o.vocab), o.steps);
  std::printf(
      "| model | precision | parameters | threads | forward ms | backward ms | Adam ms | step ms | target tok/s | "
      "model TFLOP/s | MFU | allocator peak MiB | peak RSS MiB |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::string gpu;
  if constexpr (dragoman::kWithCuda) {
    if (!o.device.is_cpu()) gpu = dragoman::cuda::device_name(o.device.index);
  }
  for (const std::string& name : o.models) {
    for (const std::string& precision : o.precisions) {
      ModelConfig config;
      if (name == "base") {
        config = ModelConfig::transformer_base();
      } else if (name == "big") {
        config = ModelConfig::transformer_big();
      } else {
        usage();
      }
      config.src_vocab_size = config.tgt_vocab_size = o.vocab;
      dragoman::DType compute = dragoman::DType::kF32;
      dragoman::parse_precision(precision, compute);
      dragoman::model::Transformer model(config, dragoman::model::ParameterPrecision::training(compute), o.device);
      model.initialize(1);
      const std::int64_t n = model.parameters().size();
      Tensor m = Tensor::zeros({n}, dragoman::DType::kF32, o.device);
      Tensor v = Tensor::zeros({n}, dragoman::DType::kF32, o.device);
      const Batch batch = random_batch(config, sentences, o.length).to(o.device, config);
      // A GPU phase is timed to the end of its kernels.
      const auto finish = [&] {
        if constexpr (dragoman::kWithCuda) {
          if (!o.device.is_cpu()) dragoman::cuda::synchronize(o.device.index);
        }
      };
      for (const int threads : o.threads) {
        dragoman::cpu::set_compute_threads(threads);
        dragoman::allocator_for(o.device).reset_peak();
        std::vector<double> fwd, bwd, adam;
        for (int step = 0; step <= o.steps; ++step) {
          model.parameters().zero_grads();
          auto t0 = std::chrono::steady_clock::now();
          dragoman::model::ForwardActivations saved;
          const double grad_scale = 1.0 / static_cast<double>(batch.target_tokens());  // as training's
          model.forward_loss(batch, {true, 1, static_cast<std::uint64_t>(step), nullptr, grad_scale}, saved);
          finish();
          const double f = seconds_since(t0);
          t0 = std::chrono::steady_clock::now();
          model.backward(std::move(saved), grad_scale);
          finish();
          const double b = seconds_since(t0);
          t0 = std::chrono::steady_clock::now();
          dragoman::ops::AdamHyper hyper;
          hyper.step = step + 1;
          hyper.lr = 1e-4;
          dragoman::ops::adam_step(model.parameters().values(), model.parameters().grads(), m, v, hyper,
                                   model.parameters().mirror());
          finish();
          const double a = seconds_since(t0);
          if (step == 0) continue;  // warm-up: first touches of the allocator's blocks
          fwd.push_back(f);
          bwd.push_back(b);
          adam.push_back(a);
        }
        const auto median = [](std::vector<double> x) {
          std::sort(x.begin(), x.end());
          return x.size() % 2 ? x[x.size() / 2] : 0.5 * (x[x.size() / 2 - 1] + x[x.size() / 2]);
        };
        const double f = median(fwd), b = median(bwd), a = median(adam), total = f + b + a;
        const double peak = static_cast<double>(dragoman::allocator_for(o.device).stats().peak_in_use);
        const double flops =
            dragoman::bench::training_step_flops(config, batch.src.dim(0), batch.src.dim(1), batch.tgt_in.dim(1)) /
            total;
        const double gpu_peak = dragoman::bench::gpu_peak_flops(gpu, compute != dragoman::DType::kF32);
        char mfu[16] = "-";
        if (gpu_peak > 0) std::snprintf(mfu, sizeof mfu, "%.1f %%", 100 * flops / gpu_peak);
        std::printf("| %s | %s | %.1fM | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.3g | %s | %.0f | %.0f |\n",
                    name.c_str(), precision.c_str(), static_cast<double>(n) / 1e6, threads, 1e3 * f, 1e3 * b, 1e3 * a,
                    1e3 * total, static_cast<double>(batch.target_tokens()) / total, flops / 1e12, mfu,
                    peak / (1 << 20), peak_rss_mib());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
