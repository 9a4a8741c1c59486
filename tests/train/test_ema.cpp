// The exponential moving average of the weights (training.ema_decay): it follows its recurrence
// from the initial weights with one worker and with two, is written as a model file of its own
// that loads, resumes bit-identically, is what validation judges (and checkpoint-best holds), and
// a decay outside [0, 1) is refused.
#include <catch2/catch.hpp>

#include <filesystem>

#include "base/error.h"
#include "model/checkpoint.h"
#include "train/run_dir.h"
#include "train/train_state.h"
#include "train/train_testing.h"
#include "train/trainer.h"

namespace dragoman::train {
namespace {

namespace fs = std::filesystem;
using test::ReversalTask;
using test::weights;

}  // namespace

TEST_CASE("train: the moving average follows ema = d * ema + (1 - d) * weights from the initial weights", "[train]") {
  for (const std::string devices : {"cpu", "cpu:2"}) {  // one worker, and two data-parallel ones
    INFO("training.devices " << devices);
    const ReversalTask task("ema-recurrence-" + devices.substr(devices.size() - 1), 200);
    TrainConfig config = task.config();
    config.training.max_steps = 1;
    config.training.valid_every = 0;
    config.training.ema_decay = 0.75;
    config.training.devices = devices;
    const TrainOptions options = task.options("run");
    REQUIRE(train(config, options).step == 1);
    const model::Transformer trained = model::load_model(checkpoint_model_path(options.run_dir, 1), DType::kF32);
    model::Transformer initial(trained.config(), DType::kF32);  // the trainer's start: the same seed
    initial.initialize(config.training.seed);
    const std::vector<float> w0 = initial.parameters().values().to_vector<float>();
    const std::vector<float> w1 = trained.parameters().values().to_vector<float>();
    const TrainState state = load_train_state(checkpoint_state_path(options.run_dir, 1));
    REQUIRE(state.ema.defined());
    const std::vector<float> ema = state.ema.to_vector<float>();
    REQUIRE(ema.size() == w0.size());
    std::size_t moved = 0;
    for (std::size_t i = 0; i < ema.size(); ++i) {
      const double want = 0.75 * w0[i] + 0.25 * w1[i];
      REQUIRE(ema[i] == Approx(want).margin(1e-6));
      moved += w1[i] != w0[i];
    }
    CHECK(moved > ema.size() / 2);  // the update changed the weights: the average is between
    // Its model file: the state's average, linked as checkpoint-last.ema, loaded like any model.
    const std::string ema_file = ema_model_path(checkpoint_model_path(options.run_dir, 1));
    CHECK(weights(ema_file) == ema);
    CHECK(weights(options.run_dir + "/checkpoints/checkpoint-last.ema.safetensors") == ema);
    model::ModelFileInfo info;
    CHECK(model::load_model(ema_file, DType::kF32, &info).config().d_model == 32);
    CHECK(info.step == 1);
  }
}

TEST_CASE("train: a run with a moving average resumes bit-identically", "[train]") {
  const ReversalTask task("ema-resume", 200);
  TrainConfig config = test::resume_config(task);
  config.training.ema_decay = 0.9;
  test::check_resume_is_bit_identical(task, config);
}

TEST_CASE("train: validation judges the moving average", "[train]") {
  // With a decay near 1 the average stays near the initial weights: its dev loss is far above the
  // trained weights'.
  const ReversalTask task("ema-validation", 200);
  TrainConfig config = task.config();
  config.training.max_steps = 200;
  config.training.valid_every = 200;
  const TrainResult plain = train(config, task.options("plain"));
  config.training.ema_decay = 0.999;
  const TrainResult averaged = train(config, task.options("averaged"));
  CHECK(averaged.best_valid_nll > plain.best_valid_nll + 0.5);
  // checkpoint-best holds the average that was judged; checkpoint-last the weights.
  const std::string run = task.options("averaged").run_dir;
  CHECK(weights(run + "/checkpoints/checkpoint-best.safetensors") ==
        weights(run + "/checkpoints/checkpoint-last.ema.safetensors"));
  CHECK(weights(run + "/checkpoints/checkpoint-last.safetensors") ==
        weights(task.options("plain").run_dir + "/checkpoints/checkpoint-last.safetensors"));
}

TEST_CASE("train: a moving average decay outside 0 <= d < 1 is refused", "[train]") {
  const ReversalTask task("ema-config", 20);
  TrainConfig config = task.config();
  for (const double bad : {1.0, -0.1, 1.5}) {
    config.training.ema_decay = bad;
    CHECK_THROWS_WITH(config.validate(), Catch::Contains("training.ema_decay must be in [0, 1)"));
  }
}

}  // namespace dragoman::train
