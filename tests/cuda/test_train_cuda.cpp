// `dragoman train` on a GPU, end to end through train(): the reversal task trained on
// cuda:0 follows the same run on the CPU (f32: the loss curve and the dev loss), a GPU run resumes
// bit-identically (f32 and bf16: every kernel is deterministic), checkpoints move between CPU and GPU
// runs, bf16 training tracks f32 with validation BLEU from the GPU decoder, every visible GPU (NCCL)
// trains like one GPU with update_freq N, the gradient norm read one update late stops a run at a
// non-finite update before saving it, and a batch too large for the device stops with a message
// that names training.max_tokens.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "device/cuda/runtime_info.h"
#include "model/checkpoint.h"
#include "train/run_dir.h"
#include "train/train_state.h"
#include "train/train_testing.h"
#include "train/trainer.h"

namespace dragoman {
namespace {

using Catch::Matchers::Contains;
using test::read_metrics;

// The training-loss lines (not validation) of a run's metrics.
std::vector<double> train_losses(const std::string& run_dir) {
  std::vector<double> losses;
  for (const nlohmann::json& line : read_metrics(run_dir)) {
    if (line.contains("loss") && !line.contains("valid_nll")) losses.push_back(line["loss"].get<double>());
  }
  return losses;
}

// resume_config (dropout, label smoothing, accumulation, clipping) for `steps` updates, the dev loss
// deciding (no validation BLEU).
train::TrainConfig nll_config(const test::ReversalTask& task, std::int64_t steps) {
  train::TrainConfig c = test::resume_config(task);
  c.training.valid_bleu = false;
  c.training.best_metric = "nll";
  c.training.max_steps = steps;
  return c;
}

double last_valid_loss(const std::string& run_dir) {
  double loss = NAN;
  for (const nlohmann::json& line : read_metrics(run_dir)) {
    if (line.contains("valid_loss")) loss = line["valid_loss"].get<double>();
  }
  return loss;
}

}  // namespace

TEST_CASE("train on cuda:0 follows the same run on the CPU (f32)", "[cuda][train]") {
  const test::ReversalTask task("cuda-follows-cpu", 400);
  train::TrainConfig config = nll_config(task, 40);
  train::train(config, task.options("cpu"));
  config.training.devices = "cuda:0";
  const train::TrainResult gpu = train::train(config, task.options("gpu"));
  CHECK(gpu.step == 40);
  const std::vector<double> expected = train_losses(task.options("cpu").run_dir);
  const std::vector<double> got = train_losses(task.options("gpu").run_dir);
  REQUIRE(got.size() == expected.size());
  REQUIRE(got.size() == 10);
  // The same batches, dropout masks and initial weights; sums in other orders (cuBLASLt, warp
  // reductions) make f32 round-off differences that Adam carries along, so the curves agree
  // closely, not bit for bit.
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("log line " << i);
    CHECK(got[i] == Approx(expected[i]).epsilon(2e-3));
  }
  CHECK(last_valid_loss(task.options("gpu").run_dir) ==
        Approx(last_valid_loss(task.options("cpu").run_dir)).epsilon(5e-3));
  const std::vector<nlohmann::json> metrics = read_metrics(task.options("gpu").run_dir);
  CHECK(metrics.front().contains("device_memory_mib"));
  CHECK(metrics.front()["device_memory_mib"].get<double>() > 0);
}

TEST_CASE("a GPU run resumes bit-identically (f32)", "[cuda][train]") {
  const test::ReversalTask task("cuda-resume-f32", 200);
  train::TrainConfig config = test::resume_config(task);
  config.training.devices = "cuda:0";
  test::check_resume_is_bit_identical(task, config);
}

TEST_CASE("a GPU run resumes bit-identically (bf16)", "[cuda][train]") {
  const test::ReversalTask task("cuda-resume-bf16", 200);
  train::TrainConfig config = test::resume_config(task);
  config.training.devices = "cuda:0";
  config.training.precision = "bf16";
  config.training.max_steps = 16;
  test::check_resume_is_bit_identical(task, config);
}

TEST_CASE("checkpoints move between CPU and GPU runs", "[cuda][train]") {
  const test::ReversalTask task("cuda-cpu-moves", 200);
  train::TrainConfig config = nll_config(task, 16);
  train::train(config, task.options("cpu"));
  // Half on the GPU, the rest on the CPU; and half on the CPU, the rest on the GPU.
  for (const auto& [first, second] : {std::pair<const char*, const char*>{"cuda:0", "cpu"}, {"cpu", "cuda:0"}}) {
    const std::string run = std::string("from-") + first;
    INFO(run);
    train::TrainConfig half = config;
    half.training.max_steps = 8;
    half.training.devices = first;
    CHECK(train::train(half, task.options(run)).step == 8);
    train::TrainConfig rest = config;
    rest.training.devices = second;
    const train::TrainResult result = train::train(rest, task.options(run));
    CHECK(result.resumed_from == 8);
    CHECK(result.step == 16);
    const std::vector<float> got = test::weights(train::checkpoint_model_path(task.options(run).run_dir, 16));
    const std::vector<float> expected = test::weights(train::checkpoint_model_path(task.options("cpu").run_dir, 16));
    REQUIRE(got.size() == expected.size());
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      diff += (static_cast<double>(got[i]) - expected[i]) * (static_cast<double>(got[i]) - expected[i]);
      norm += static_cast<double>(expected[i]) * expected[i];
    }
    CHECK(std::sqrt(diff / norm) < 5e-3);
  }
}

TEST_CASE("bf16 training on the GPU tracks f32, and validation BLEU comes from the GPU decoder", "[cuda][train]") {
  const test::ReversalTask task("cuda-bf16-tracks", 1000);
  train::TrainConfig config = task.config();
  config.model.label_smoothing = 0.1;
  config.training.devices = "cuda:0";
  config.training.max_steps = 600;
  config.training.valid_every = 300;
  config.training.valid_bleu = true;
  config.training.valid_beam = 4;
  double dev_loss[2] = {0, 0};
  train::TrainResult results[2];
  int i = 0;
  for (const std::string precision : {"fp32", "bf16"}) {
    config.training.precision = precision;
    results[i] = train::train(config, task.options(precision));
    dev_loss[i++] = last_valid_loss(task.options(precision).run_dir);
  }
  INFO("dev loss: fp32 " << dev_loss[0] << ", bf16 " << dev_loss[1]);
  CHECK(dev_loss[0] < 0.8);  // learned (untrained: about log 25 = 3.2)
  CHECK(std::abs(dev_loss[1] - dev_loss[0]) <= 0.04 * dev_loss[0]);  // as the CPU test (test_trainer.cpp)
  CHECK(results[0].best_valid_bleu > 90);
  CHECK(results[1].best_valid_bleu > 90);
}

TEST_CASE("train on every visible GPU (devices: all, NCCL) follows one GPU with update_freq N", "[cuda][train]") {
  const test::ReversalTask task("cuda-all-gpus", 300);
  train::TrainConfig config = nll_config(task, 16);
  const int gpus = cuda::device_count();
  train::TrainConfig one = config;
  one.training.devices = "cuda:0";
  one.training.update_freq = 2 * gpus;
  train::train(one, task.options("one"));
  train::TrainConfig all = config;
  all.training.devices = "all";  // one NCCL communicator per GPU, summed by ncclAllReduce
  CHECK(train::train(all, task.options("all")).step == 16);
  const std::vector<double> expected = train_losses(task.options("one").run_dir);
  const std::vector<double> got = train_losses(task.options("all").run_dir);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(expected[i]).epsilon(1e-4));
}

TEST_CASE("a GPU run reads its gradient norm one update late and stops at a non-finite one unsaved", "[cuda][train]") {
  const test::ReversalTask task("cuda-deferred-norm", 200);
  train::TrainConfig config = test::resume_config(task);  // clipping included
  config.training.devices = "cuda:0";
  config.training.max_steps = 8;
  config.training.log_every = 1;
  config.checkpoint.every_steps = 2;
  // The GPU's default: every update's norm is read behind it, and each log line has its own.
  const train::TrainOptions late = task.options("late");
  REQUIRE(train::train(config, late).step == 8);
  int norms = 0;
  for (const nlohmann::json& line : read_metrics(late.run_dir)) {
    if (!line.contains("gnorm")) continue;
    CHECK(std::isfinite(line["gnorm"].get<double>()));
    CHECK(line["gnorm"].get<double>() > 0);
    ++norms;
  }
  CHECK(norms == 8);
  train::TrainOptions bad = task.options("bad");
  bad.inject_overflow_at = {3};
  CHECK_THROWS_WITH(train::train(config, bad),
                    Contains("update 3 gave a non-finite gradient norm") && Contains("stopping without applying it"));
  CHECK(train::checkpoint_steps(bad.run_dir) == std::vector<std::int64_t>{2});
}

TEST_CASE("a batch too large for the GPU stops with a message naming training.max_tokens", "[cuda][train]") {
  // 2,000 pairs of 200 words, all in one batch of 400,000 tokens a side through a model with
  // d_model 1024 and d_ff 4096: each activation kept for the backward pass is 1.6 GB (6.6 GB for
  // the feed-forward's), a dozen of them per layer over 12 layers, far beyond any GPU's memory.
  const std::string dir = test::scratch_dir("cuda-oom");
  std::string source, target;
  for (int line = 0; line < 2000; ++line) {
    std::string words;
    for (int w = 0; w < 200; ++w) words += std::string(w ? " " : "") + static_cast<char>('a' + (line + w) % 10);
    source += words + "\n";
    target += words + "\n";
  }
  test::write_text(dir + "/t.src", source);
  test::write_text(dir + "/t.tgt", target);
  train::TrainConfig config;
  config.data.train_source = dir + "/t.src";
  config.data.train_target = dir + "/t.tgt";
  config.data.vocabulary = test::write_letters_vocabulary(dir);
  config.data.max_length = 500;
  config.model.d_model = 1024;
  config.model.d_ff = 4096;
  config.model.heads = 16;
  config.model.max_positions = 512;
  config.training.devices = "cuda:0";
  config.training.max_tokens = 1000000;
  config.training.max_steps = 1;
  train::TrainOptions options;
  options.run_dir = dir + "/run";
  CHECK_THROWS_WITH(train::train(config, options), Contains("update 1 ran out of memory on cuda:0") &&
                                                       Contains("training.max_tokens 1000000") &&
                                                       Contains("no checkpoint was written yet"));
}

}  // namespace dragoman
