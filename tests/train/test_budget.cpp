// training.max_minutes: the number of updates that fits a budget (budget.h), the schedule that
// anneals to it (schedule.h), and runs with a simulated pace (TrainOptions::simulated_update_seconds:
// 0.5 s an update, validations and checkpoints free), whose count is known in advance:
// the calibration window opens after update 2 (1.0 s >= 1 % of the budget, 2 updates into the
// process) and closes after the first update past 8 % of the budget with 5 updates in it (update 10
// for a minute, 7 for half a minute), and the count leaves 5 % of the budget free. With a held peak
// the count is fixed again after the first update past 55 % of the budget (2 % left free).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "base/error.h"
#include "train/budget.h"
#include "train/run_dir.h"
#include "train/schedule.h"
#include "train/train_state.h"
#include "train/train_testing.h"
#include "train/trainer.h"

namespace dragoman::train {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Task = test::ReversalTask;
using test::read_metrics;
using test::weights;

// The metrics line that records the count a budget fixed (null: none).
nlohmann::json budget_line(const std::string& run) {
  for (const nlohmann::json& line : read_metrics(run)) {
    if (line.contains("budget_updates")) return line;
  }
  return nullptr;
}

// The lines of a metrics file so far (0 before it exists).
std::size_t read_metrics_count(const std::string& path) {
  std::ifstream in(path);
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line);) lines += line.empty() ? 0 : 1;
  return lines;
}

TrainConfig budget_config(const Task& task, double minutes, const std::string& decay) {
  TrainConfig config = task.config();
  config.training.max_minutes = minutes;
  config.training.lr_decay = decay;
  config.training.max_steps = 0;
  config.training.log_every = 1;
  return config;
}

TrainOptions simulated(const Task& task, const std::string& run) {
  TrainOptions options = task.options(run);
  options.simulated_update_seconds = 0.5;
  return options;
}

// The model after `steps` updates of a run told max_steps `steps` (no budget), linear decay with
// `hold`: what a budgeted run that fixed that count inside the warmup must equal.
std::vector<float> max_steps_weights(const Task& task, std::int64_t steps, double hold, const std::string& name) {
  TrainConfig fixed = task.config();
  fixed.training.lr_decay = "linear";
  fixed.training.lr_hold = hold;
  fixed.training.max_steps = steps;
  fixed.training.log_every = 1;
  const TrainOptions straight = task.options(name);
  REQUIRE(train(fixed, straight).step == steps);
  return weights(checkpoint_model_path(straight.run_dir, steps));
}

// A run that fails at update `fail_at` (worker 0), leaving `last_checkpoint` its newest checkpoint,
// then the same command again: the resumed run.
TrainResult fail_and_resume(const TrainConfig& config, TrainOptions options, std::int64_t fail_at,
                            std::int64_t last_checkpoint) {
  options.fail_worker_at = {0, fail_at};
  CHECK_THROWS_WITH(train(config, options), Contains("fail_worker_at"));
  CHECK(checkpoint_steps(options.run_dir).back() == last_checkpoint);
  options.fail_worker_at = {-1, -1};
  return train(config, options);
}

}  // namespace

TEST_CASE("budget: the updates that fit, with validations, checkpoints and a cap", "[train][budget]") {
  BudgetInputs in;
  in.budget_seconds = 600;
  in.elapsed_seconds = 30;
  in.step = 60;
  in.update_seconds = 0.5;
  // Updates only: 30 + (N - 60) x 0.5 <= 570 (95 % of 600).
  CHECK(updates_that_fit(in) == 60 + 1080);
  CHECK(budget_seconds_at(in, 1140) == Approx(570.0));
  // A validation every 100 updates (5 s) and checkpoints every 200 back from the last (1 s): with
  // N = 1140, validations at 100 .. 1100 (11: 55 s) and checkpoints at 1140, 940, .. 140 (6: 6 s).
  in.valid_every = 100;
  in.validation_seconds = 5;
  in.checkpoint_every = 200;
  in.checkpoint_seconds = 1;
  CHECK(budget_seconds_at(in, 1140) == Approx(30 + 540 + 55 + 6));
  const std::int64_t n = updates_that_fit(in);
  CHECK(budget_seconds_at(in, n) <= 570.0);
  CHECK(budget_seconds_at(in, n + 1) > 570.0);
  // 1030: 30 + 485 + 50 (10 validations) + 5 (checkpoints at 1030, 830, .., 230) = 570; 1031: 570.5.
  CHECK(n == 1030);
  in.max_steps = 500;
  CHECK(updates_that_fit(in) == 500);
  in.max_steps = 0;
  // Nothing more fits: the count is the step already reached.
  in.elapsed_seconds = 571;
  CHECK(updates_that_fit(in) == 60);
  in.update_seconds = 0;
  CHECK_THROWS_AS(updates_that_fit(in), Error);
}

TEST_CASE("budget: the schedule anneals to the fixed count", "[train][budget]") {
  const auto lr = [](std::int64_t step, std::int64_t total, std::int64_t fixed_at, const char* decay = "linear") {
    return budget_learning_rate(step, 32, 100, 0.0, 0.3, decay, total, fixed_at, 0);
  };
  const double peak = noam_learning_rate(100, 32, 100, 0.3);
  for (const char* decay : {"linear", "cosine"}) {
    INFO(decay);
    // Fixed inside the warmup: exactly the max_steps schedule with max_steps = the count.
    for (std::int64_t step = 1; step <= 700; ++step) {
      CHECK(lr(step, 700, 40, decay) == learning_rate(step, 32, 100, 0.0, 0.3, decay, 700));
    }
    // Not fixed yet: the warmup, then the peak held.
    CHECK(lr(50, 0, 0, decay) == noam_learning_rate(50, 32, 100, 0.3));
    CHECK(lr(400, 0, 0, decay) == peak);
    // Fixed after the warmup: the peak held to that update, then down to 0 at the count.
    CHECK(lr(250, 700, 250, decay) == peak);
    CHECK(lr(251, 700, 250, decay) < peak);
    CHECK(lr(700, 700, 250, decay) == 0.0);
    CHECK(lr(475, 700, 250, decay) == Approx(peak * 0.5));
    // A count inside the warmup: from the ramp's value where it was fixed down to 0 at the count.
    CHECK(lr(7, 58, 7, decay) == noam_learning_rate(7, 32, 100, 0.3));
    CHECK(lr(8, 58, 7, decay) < lr(7, 58, 7, decay));
    CHECK(lr(58, 58, 7, decay) == 0.0);
  }
  CHECK(lr(32, 57, 7) == Approx(noam_learning_rate(7, 32, 100, 0.3) * 0.5));
  // With max_steps (500): before the count is fixed, the max_steps schedule (a run that reaches
  // max_steps first anneals to zero there); fixed after the warmup, down from where it was.
  for (const std::int64_t step : {1, 50, 100, 101, 300, 499, 500}) {
    CHECK(budget_learning_rate(step, 32, 100, 0.0, 0.3, "linear", 0, 0, 500) ==
          learning_rate(step, 32, 100, 0.0, 0.3, "linear", 500));
  }
  const double at_fix = learning_rate(250, 32, 100, 0.0, 0.3, "linear", 500);
  CHECK(budget_learning_rate(250, 32, 100, 0.0, 0.3, "linear", 400, 250, 500) == at_fix);
  CHECK(budget_learning_rate(325, 32, 100, 0.0, 0.3, "linear", 400, 250, 500) == Approx(at_fix * 0.5));
  CHECK(budget_learning_rate(400, 32, 100, 0.0, 0.3, "linear", 400, 250, 500) == 0.0);
}

TEST_CASE("budget: a held peak (training.lr_hold) holds inside the fixed count", "[train][budget]") {
  const auto lr = [](std::int64_t step, std::int64_t total, std::int64_t fixed_at, double hold) {
    return budget_learning_rate(step, 32, 100, 0.0, 0.3, "linear", total, fixed_at, 0, hold);
  };
  const double peak = noam_learning_rate(100, 32, 100, 0.3);
  // Fixed inside the warmup: the max_steps schedule with the same hold.
  for (std::int64_t step = 1; step <= 700; ++step) {
    CHECK(lr(step, 700, 40, 0.5) == learning_rate(step, 32, 100, 0.0, 0.3, "linear", 700, 0.5));
  }
  CHECK(lr(400, 700, 40, 0.5) == peak);
  CHECK(lr(550, 700, 40, 0.5) == Approx(peak / 2));
  // Fixed after the warmup: held from the fix to 250 + 0.5 x 450, then down to 0 at the count.
  CHECK(lr(475, 700, 250, 0.5) == peak);
  CHECK(lr(587, 700, 250, 0.5) < peak);
  CHECK(lr(587, 700, 250, 0.5) == Approx(peak * 113 / 225));
  CHECK(lr(700, 700, 250, 0.5) == 0.0);
}

TEST_CASE("budget: a run fixes its count by its pace, and is the run of that many updates", "[train][budget]") {
  const Task task("budget", 200);
  const TrainOptions options = simulated(task, "budget");
  const TrainResult result = train(budget_config(task, 1.0, "linear"), options);
  // Fixed after update 10 (5.0 s): 10 + floor((57 - 5) / 0.5) = 114.
  CHECK(result.step == 114);
  CHECK(!result.budget_spent);
  const nlohmann::json line = budget_line(options.run_dir);
  REQUIRE(line != nullptr);
  CHECK(line["step"] == 10);
  CHECK(line["budget_updates"] == 114);
  CHECK(line["calibration_update_seconds"].get<double>() == 0.5);
  // The count is in the state of every checkpoint from the calibration's on: at 10 (the calibration
  // times one), then every 100 counted back from 114.
  CHECK(checkpoint_steps(options.run_dir) == std::vector<std::int64_t>{10, 14, 114});
  for (const std::int64_t step : {10, 14, 114}) {
    const TrainState state = load_train_state(checkpoint_state_path(options.run_dir, step));
    CHECK(state.budget_updates == 114);
    CHECK(state.budget_fixed_at == 10);
    CHECK(state.budget_minutes == 1.0);
  }
  // The same weights as a run told max_steps 114 (the count was fixed inside the warmup).
  CHECK(weights(checkpoint_model_path(options.run_dir, 114)) == max_steps_weights(task, 114, 0.0, "straight"));
  // Run again: it is finished.
  const TrainResult again = train(budget_config(task, 1.0, "linear"), options);
  CHECK(again.already_finished);
  CHECK(again.step == 114);
}

TEST_CASE("budget: the held rate is the same for any count", "[train][budget]") {
  const auto lr = [](std::int64_t step, std::int64_t total, std::int64_t fixed_at) {
    return budget_learning_rate(step, 32, 100, 0.0, 0.3, "linear", total, fixed_at, 0, 0.5);
  };
  // Fixed inside the warmup (at 40), 700 updates, hold 0.5: held to 100 + 0.5 x 600 = 400.
  CHECK(budget_rate_held(400, 100, 700, 40, 0.5));
  CHECK(!budget_rate_held(401, 100, 700, 40, 0.5));
  CHECK(budget_rate_held(399, 100, 698, 40, 0.5));
  CHECK(!budget_rate_held(400, 100, 698, 40, 0.5));
  for (std::int64_t step = 1; step <= 400; ++step) {
    CHECK(budget_rate_held(step, 100, 700, 40, 0.5));
    CHECK(lr(step, 700, 40) == lr(step, 900, 40));
  }
  CHECK(lr(401, 700, 40) < lr(401, 900, 40));
  // Fixed after the warmup (at 250): held to 250 + 0.5 x 450 = 475.
  CHECK(budget_rate_held(475, 100, 700, 250, 0.5));
  CHECK(!budget_rate_held(476, 100, 700, 250, 0.5));
  CHECK(lr(475, 700, 250) == lr(475, 1000, 250));
  // Without a hold: the decay starts at the warmup's end (or at the fix).
  CHECK(budget_rate_held(100, 100, 700, 40, 0.0));
  CHECK(!budget_rate_held(101, 100, 700, 40, 0.0));
  CHECK(budget_rate_held(250, 100, 700, 250, 0.0));
  CHECK(!budget_rate_held(251, 100, 700, 250, 0.0));
}

TEST_CASE("budget: with a held peak the count is fixed again and the run is the run of that count", "[train][budget]") {
  const Task task("budget-hold", 200);
  const TrainOptions options = simulated(task, "hold");
  TrainConfig config = budget_config(task, 1.0, "linear");
  config.training.lr_hold = 0.5;
  // Fixed after update 10 at 114 (5 % of the budget free), then again after update 66 (33 s, 55 %
  // of the budget) by the pace since update 42 (21 s, 35 %): 66 + floor((58.8 - 33) / 0.5) = 117
  // (2 % free).
  CHECK(train(config, options).step == 117);
  nlohmann::json refined;
  for (const nlohmann::json& line : read_metrics(options.run_dir)) {
    if (line.contains("budget_refined_updates")) refined = line;
  }
  REQUIRE(refined != nullptr);
  CHECK(refined["step"] == 66);
  CHECK(refined["budget_refined_updates"] == 117);
  CHECK(refined["budget_updates_before"] == 114);
  CHECK(refined["refine_update_seconds"].get<double>() == 0.5);
  // Update by update: the max_steps schedule of 117 updates with the hold (the peak from the
  // warmup's end, 100, to 108; then down to 0 at 117).
  int lines = 0;
  for (const nlohmann::json& line : read_metrics(options.run_dir)) {
    if (!line.contains("lr")) continue;
    ++lines;
    const std::int64_t step = line["step"];
    CHECK(line["lr"].get<double>() == learning_rate(step, 32, 100, 0.0, 0.3, "linear", 117, 0.5));
  }
  CHECK(lines == 117);
  // The checkpoints: the calibration's (10), 100 back from 114 (14), then from 117 (117); the state
  // records the count in force when each was written.
  CHECK(checkpoint_steps(options.run_dir) == std::vector<std::int64_t>{10, 14, 117});
  CHECK(load_train_state(checkpoint_state_path(options.run_dir, 14)).budget_updates == 114);
  const TrainState last = load_train_state(checkpoint_state_path(options.run_dir, 117));
  CHECK(last.budget_updates == 117);
  CHECK(last.budget_fixed_at == 10);
  CHECK(last.budget_refined_at == 66);
  // The same weights as a run told max_steps 117 with the same hold.
  CHECK(weights(checkpoint_model_path(options.run_dir, 117)) == max_steps_weights(task, 117, 0.5, "straight"));
  // A run resumed between the two fixes keeps the first count (only the process that fixed it
  // fixes it again): the max_steps run of 114.
  const TrainOptions failing = simulated(task, "failing");
  const TrainResult resumed = fail_and_resume(config, failing, 30, 14);
  CHECK(resumed.resumed_from == 14);
  CHECK(resumed.step == 114);
  CHECK(load_train_state(checkpoint_state_path(failing.run_dir, 114)).budget_refined_at == 0);
  CHECK(weights(checkpoint_model_path(failing.run_dir, 114)) == max_steps_weights(task, 114, 0.5, "straight114"));
}

TEST_CASE("budget: a run that fails after the calibration resumes with the same count", "[train][budget]") {
  const Task task("budget-resume", 200);
  const TrainConfig config = budget_config(task, 1.0, "cosine");
  const TrainOptions straight = simulated(task, "straight");
  CHECK(train(config, straight).step == 114);
  const TrainOptions failing = simulated(task, "failing");
  const TrainResult resumed = fail_and_resume(config, failing, 50, 14);
  CHECK(resumed.resumed_from == 14);
  CHECK(resumed.step == 114);
  CHECK(weights(checkpoint_model_path(failing.run_dir, 114)) == weights(checkpoint_model_path(straight.run_dir, 114)));
  // The same losses and learning rates, update by update (the timings differ).
  const auto curve = [](const std::string& run) {
    std::vector<std::pair<double, double>> points;
    for (const nlohmann::json& line : read_metrics(run)) {
      if (line.contains("loss")) points.emplace_back(line["loss"].get<double>(), line["lr"].get<double>());
    }
    return points;
  };
  CHECK(curve(failing.run_dir) == curve(straight.run_dir));
  // A budget changed on resuming keeps the count (the schedule depends on it).
  const TrainState state = load_train_state(checkpoint_state_path(failing.run_dir, 114));
  CHECK(state.budget_updates == 114);
}

TEST_CASE("budget: a budget shorter than the warmup anneals from where the count was fixed", "[train][budget]") {
  const Task task("budget-short", 200);
  const TrainOptions options = simulated(task, "short");
  // Fixed after update 7 (3.5 s >= 2.4 s): 7 + floor((28.5 - 3.5) / 0.5) = 57 updates, all within
  // the warmup of 100.
  CHECK(train(budget_config(task, 0.5, "linear"), options).step == 57);
  std::map<std::int64_t, double> lr;
  for (const nlohmann::json& line : read_metrics(options.run_dir)) {
    if (line.contains("lr")) lr[line["step"].get<std::int64_t>()] = line["lr"].get<double>();
  }
  CHECK(lr.at(7) == noam_learning_rate(7, 32, 100, 0.3));
  CHECK(lr.at(8) < lr.at(7));
  CHECK(lr.at(57) == 0.0);
  for (std::int64_t step = 9; step <= 57; ++step) CHECK(lr.at(step) < lr.at(step - 1));
}

TEST_CASE("budget: with inverse_sqrt the budget only stops the run", "[train][budget]") {
  const Task task("budget-inverse-sqrt", 200);
  const TrainOptions options = simulated(task, "run");
  const TrainResult result = train(budget_config(task, 0.5, "inverse_sqrt"), options);
  CHECK(result.step == 60);  // 60 x 0.5 s = the 30 s budget
  CHECK(result.budget_spent);
  CHECK(budget_line(options.run_dir) == nullptr);
  CHECK(checkpoint_steps(options.run_dir).back() == 60);
  CHECK(train(budget_config(task, 0.5, "inverse_sqrt"), options).already_finished);
  // A larger budget continues it.
  CHECK(train(budget_config(task, 0.6, "inverse_sqrt"), options).step == 72);
}

TEST_CASE("budget: a signal inside the calibration saves the run, which calibrates again", "[train][budget]") {
  const Task task("budget-signal", 200);
  const TrainConfig config = budget_config(task, 1.0, "linear");
  TrainOptions options = simulated(task, "run");
  std::atomic<int> stop{0};
  options.stop_signal = &stop;
  std::thread raiser([&] {  // after update 3 is logged: inside the window (updates 3-10), usually
    const std::string metrics = options.run_dir + "/metrics.jsonl";
    while (read_metrics_count(metrics) < 3) std::this_thread::sleep_for(std::chrono::microseconds(200));
    stop.store(2);
  });
  const TrainResult stopped = train(config, options);
  raiser.join();
  REQUIRE(stopped.interrupted);
  const bool interrupted_kind = fs::path(stopped.last_checkpoint).filename().string().rfind("interrupted", 0) == 0;
  const TrainState state = load_train_state(checkpoint_state_path(
      options.run_dir, stopped.step, interrupted_kind ? CheckpointKind::kInterrupted : CheckpointKind::kRegular));
  if (stopped.step < 10) CHECK(state.budget_updates == 0);
  options.stop_signal = nullptr;
  const TrainResult resumed = train(config, options);
  const nlohmann::json line = budget_line(options.run_dir);
  REQUIRE(line != nullptr);
  CHECK(resumed.step == line["budget_updates"].get<std::int64_t>());
  // Calibrated again from the resumed update: the same pace, so about the same count.
  CHECK(std::abs(resumed.step - 114) <= 2);
}

}  // namespace dragoman::train
