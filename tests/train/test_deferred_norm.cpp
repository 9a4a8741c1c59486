// The gradient norm read one update late (TrainOptions::defer_grad_norm: a GPU's default for bf16 and
// fp32 Adam, here on the CPU): the same training to the bit as the norm read at once, clipping
// included, and a non-finite update still stops the run without being applied or saved.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "train/run_dir.h"
#include "train/train_testing.h"
#include "train/trainer.h"

namespace dragoman::train {

using Catch::Matchers::Contains;

namespace {

// 8 updates with a checkpoint every `every_steps`, no validation.
TrainConfig nan_config(const test::ReversalTask& task, std::int64_t every_steps) {
  TrainConfig config = task.config();
  config.training.max_steps = 8;
  config.training.valid_every = 0;
  config.checkpoint.every_steps = every_steps;
  return config;
}

// The norm read late, and update 3's gradients made infinite.
TrainOptions nan_options(const test::ReversalTask& task) {
  TrainOptions options = task.options("run");
  options.defer_grad_norm = true;
  options.inject_overflow_at = {3};
  return options;
}

}  // namespace

TEST_CASE("train: the gradient norm read one update late trains the same bits as the norm read at once", "[train]") {
  const test::ReversalTask task("deferred-norm", 200);
  for (const std::string precision : {"fp32", "bf16"}) {
    for (const double clip : {0.0, 0.5}) {
      DYNAMIC_SECTION(precision << " clip_norm " << clip) {
        TrainConfig config = task.config();
        config.training.precision = precision;
        config.training.clip_norm = clip;
        config.training.max_steps = 12;
        config.training.log_every = 1;
        config.training.valid_every = 6;
        config.checkpoint.every_steps = 6;
        const std::string name = precision + "-" + std::to_string(clip > 0);
        const TrainOptions at_once = task.options(name + "-at-once");
        TrainOptions late = task.options(name + "-late");
        late.defer_grad_norm = true;
        REQUIRE(train(config, at_once).step == 12);
        REQUIRE(train(config, late).step == 12);
        for (const std::int64_t step : {6, 12}) {
          INFO("step " << step);
          CHECK(test::weights(checkpoint_model_path(late.run_dir, step)) ==
                test::weights(checkpoint_model_path(at_once.run_dir, step)));
        }
        // Every log line has the same loss and the same gradient norm (checked before it is logged).
        std::vector<nlohmann::json> a, b;
        for (const nlohmann::json& line : test::read_metrics(at_once.run_dir)) {
          if (line.contains("gnorm")) a.push_back(line);
        }
        for (const nlohmann::json& line : test::read_metrics(late.run_dir)) {
          if (line.contains("gnorm")) b.push_back(line);
        }
        REQUIRE(a.size() == 12);
        REQUIRE(b.size() == a.size());
        int clipped = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
          INFO("log line " << i);
          CHECK(b[i]["gnorm"] == a[i]["gnorm"]);
          CHECK(b[i]["loss"] == a[i]["loss"]);
          clipped += clip > 0 && a[i]["gnorm"].get<double>() > clip;
        }
        if (clip > 0) CHECK(clipped > 0);  // the clipping factor was in play
      }
    }
  }
}

TEST_CASE("train: a non-finite gradient norm read one update late stops the run unapplied and unsaved", "[train]") {
  const test::ReversalTask task("deferred-norm-nan", 200);
  TrainConfig config = nan_config(task, 2);
  TrainOptions options = nan_options(task);
  // Found after update 4's gradients (no checkpoint is due at 3).
  CHECK_THROWS_WITH(train(config, options), Contains("update 3 gave a non-finite gradient norm (inf)") &&
                                                Contains("stopping without applying it"));
  CHECK(checkpoint_steps(options.run_dir) == std::vector<std::int64_t>{2});
  // The run resumes from the last good checkpoint (step 2): without the overflow it reaches step 4
  // with the weights of an uninterrupted run. (That Adam leaves everything untouched under a NaN
  // factor is tested on the op: tests/ops/test_adam.cpp, tests/cuda/test_ops_adam.cpp.)
  options.inject_overflow_at.clear();
  config.training.max_steps = 4;
  REQUIRE(train(config, options).step == 4);
  const TrainOptions straight = task.options("straight");
  REQUIRE(train(config, straight).step == 4);
  CHECK(test::weights(checkpoint_model_path(options.run_dir, 4)) ==
        test::weights(checkpoint_model_path(straight.run_dir, 4)));
}

TEST_CASE("train: a non-finite gradient norm read one update late is found before its own checkpoint", "[train]") {
  const test::ReversalTask task("deferred-norm-nan-save", 200);
  const TrainConfig config = nan_config(task, 1);
  const TrainOptions options = nan_options(task);
  CHECK_THROWS_WITH(train(config, options), Contains("update 3 gave a non-finite gradient norm"));
  CHECK(checkpoint_steps(options.run_dir) == std::vector<std::int64_t>{1, 2});
}

}  // namespace dragoman::train
