// The training loop end to end on a synthetic task (reverse a sequence of letters): a tiny model
// learns it, a resumed (or interrupted and resumed) run is bit-identical to an uninterrupted one,
// run directories are guarded, and k accumulated batches give the gradient of one k times larger.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "data/batching.h"
#include "decode/translator.h"
#include "model/checkpoint.h"
#include "train/schedule.h"
#include "train/train_state.h"
#include "train/train_testing.h"
#include "train/trainer.h"
#include "train/update.h"

namespace dragoman::train {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

using Task = test::ReversalTask;
using test::read_metrics;
using test::resume_config;
using test::weights;

}  // namespace

TEST_CASE("train: a tiny model learns to reverse sequences, and translates the dev set", "[train]") {
  const Task task("learn");
  TrainConfig config = task.config();
  config.training.valid_bleu = true;  // validation translates the dev set (greedy) and scores BLEU
  config.training.valid_beam = 1;
  // Annealed to zero at the last update: the model judged below is the last one. (At the Noam
  // schedule's rate of update 500, Adam on this near-zero loss can spike in the last updates, by
  // the CPU level's rounding: it did at AVX2 after the cross-entropy's rounding changed.)
  config.training.lr_decay = "linear";
  const TrainOptions options = task.options("run");
  const TrainResult result = train(config, options);
  CHECK(result.step == config.training.max_steps);
  CHECK(!result.interrupted);
  // Near-zero loss: the dev set's per-token negative log-likelihood (label smoothing off here).
  CHECK(result.best_valid_nll < 0.05);
  CHECK(result.last_train_loss < 0.1);

  // The run directory: config, metrics, checkpoints (the last 5 kept, plus last and best).
  const std::string run = options.run_dir;
  CHECK(fs::exists(run + "/config.yaml"));
  CHECK(fs::exists(run + "/train.cache"));
  CHECK(fs::exists(checkpoint_model_path(run, 500)));
  CHECK(fs::exists(checkpoint_state_path(run, 500)));
  CHECK(fs::exists(run + "/checkpoints/checkpoint-last.safetensors"));
  CHECK(fs::exists(run + "/checkpoints/checkpoint-best.safetensors"));
  CHECK(weights(run + "/checkpoints/checkpoint-last.safetensors") == weights(checkpoint_model_path(run, 500)));
  // A model file is all translate needs: weights, config and vocabulary.
  model::ModelFileInfo info;
  const model::Transformer model = model::load_model(checkpoint_model_path(run, 500), DType::kF32, &info);
  CHECK(info.step == 500);
  CHECK(info.vocabulary == test::read_text(task.vocab));
  CHECK(model.config().src_vocab_size == 25);

  // The trained model translates: beam search over the model file reverses the dev sentences.
  const text::Vocabulary vocab = text::Vocabulary::load(task.vocab);
  decode::TranslatorOptions o;
  o.search.beam = 4;
  const std::vector<std::string> sources = test::read_lines(task.valid.source);
  const std::vector<std::string> references = test::read_lines(task.valid.target);
  const std::vector<decode::Translation> translations = decode::Translator(model, vocab, o).translate(sources);
  REQUIRE(translations.size() == 100);
  std::vector<std::string> hypotheses;
  int exact = 0;
  for (std::size_t i = 0; i < translations.size(); ++i) {
    hypotheses.push_back(translations[i].nbest.front().text);
    exact += hypotheses.back() == references[i];
  }
  CHECK(exact >= 95);
  // Validation BLEU: near 100 at the end, the last dev translation written to the run directory.
  CHECK(result.best_valid_bleu > 95);
  const std::vector<std::string> valid_translation = test::read_lines(run + "/valid-translation.txt");
  REQUIRE(valid_translation.size() == 100);
  int agree = 0;
  for (std::size_t i = 0; i < 100; ++i) agree += valid_translation[i] == references[i];
  CHECK(agree >= 95);

  // metrics.jsonl: one line per log_every steps with the schedule's learning rate, and one per validation.
  int train_lines = 0, valid_lines = 0;
  double last_bleu = -1;
  for (const nlohmann::json& line : read_metrics(run)) {
    if (line.contains("valid_nll")) {
      ++valid_lines;
      REQUIRE(line.contains("valid_bleu"));
      last_bleu = line["valid_bleu"].get<double>();
      continue;
    }
    ++train_lines;
    const std::int64_t step = line["step"];
    CHECK(step % 20 == 0);
    CHECK(line["lr"].get<double>() == learning_rate(step, 32, 100, 0.0, 0.3, "linear", 500));
    CHECK(line["tgt_tokens_per_s"].get<double>() > 0);
    CHECK(std::isfinite(line["gnorm"].get<double>()));
  }
  CHECK(train_lines == 25);
  CHECK(valid_lines == 5);
  CHECK(last_bleu > 95);
}

TEST_CASE("train: a resumed run is bit-identical to an uninterrupted one", "[train]") {
  const Task task("resume", 200);
  test::check_resume_is_bit_identical(task, resume_config(task));
}

TEST_CASE("train: a resumed run with a curriculum is bit-identical to an uninterrupted one", "[train]") {
  const Task task("resume-curriculum", 200);
  TrainConfig config = resume_config(task);
  config.training.max_tokens = 32;  // about 40 batches an epoch: stopped halfway inside the curriculum
  config.data.curriculum = 0.8;
  config.data.curriculum_start = 0.2;
  test::check_resume_is_bit_identical(task, config);
  // The curriculum changed the run: other batches, other weights than without it.
  const TrainOptions plain = task.options("no-curriculum");
  TrainConfig without = config;
  without.data.curriculum = 0;
  train(without, plain);
  const TrainOptions with = task.options("straight");  // check_resume_is_bit_identical's uninterrupted run
  CHECK(weights(checkpoint_model_path(plain.run_dir, config.training.max_steps)) !=
        weights(checkpoint_model_path(with.run_dir, config.training.max_steps)));
}

TEST_CASE("train: a tiny model learns with Muon, and a resumed Muon run is bit-identical", "[train]") {
  const Task task("muon");
  TrainConfig config = task.config();
  config.training.optimizer = "muon";
  config.training.lr_decay = "linear";
  config.training.valid_every = 500;
  const TrainResult result = train(config, task.options("run"));
  CHECK(result.step == config.training.max_steps);
  CHECK(result.best_valid_nll < 0.05);
  CHECK(result.last_train_loss < 0.1);
  TrainConfig resumed = resume_config(task);
  resumed.training.optimizer = "muon";
  test::check_resume_is_bit_identical(task, resumed);
  // Switching the optimizer of a run is refused: Muon's momentum is not Adam's first moment.
  TrainConfig adam = resumed;
  adam.training.optimizer = "adam";
  CHECK_THROWS_WITH(train(adam, task.options("straight")),
                    Contains("another config") && Contains("training.optimizer"));
  // Muon runs on the CPU only so far.
  TrainConfig gpu = config;
  gpu.training.devices = "cuda:0";
  CHECK_THROWS_WITH(train(gpu, task.options("gpu")), Contains("training.optimizer muon") && Contains("CPU only"));
}

TEST_CASE("train: a resumed bf16 run is bit-identical to an uninterrupted one", "[train]") {
  const Task task("resume-bf16", 200);
  TrainConfig config = resume_config(task);
  config.training.precision = "bf16";
  config.training.max_steps = 16;
  test::check_resume_is_bit_identical(task, config);
}

// The issue's own check is configs/tiny.yaml on the demo corpus (scripts/precision-check.sh); this is
// the same comparison on the reversal task, small enough for the test suite: the label-smoothed dev
// loss (the training objective) after 600 updates, when the curves have flattened.
// The bound is 4 %: on this small task the dev loss after 600 updates moves by about 1 % from float32
// summation order alone (fp32 with OpenBLAS's sgemm 0.641, with oneDNN's 0.635), and 16-bit
// activations round far more (measured with oneDNN: fp32 0.635, bf16 0.655, fp16 0.645).
TEST_CASE("train: bf16 and fp16 training track fp32 (dev loss within 4 %)", "[train]") {
  const Task task("precision-tracks", 1000);
  TrainConfig config = task.config();
  config.model.label_smoothing = 0.1;
  config.training.max_steps = 600;
  config.training.valid_every = 600;
  config.training.threads = 1;
  std::map<std::string, double> dev_loss;
  for (const std::string precision : {"fp32", "bf16", "fp16"}) {
    config.training.precision = precision;
    train(config, task.options(precision));
    const std::vector<nlohmann::json> metrics = read_metrics(task.options(precision).run_dir);
    REQUIRE(metrics.back().contains("valid_loss"));
    dev_loss[precision] = metrics.back()["valid_loss"].get<double>();
  }
  INFO("dev loss: fp32 " << dev_loss["fp32"] << ", bf16 " << dev_loss["bf16"] << ", fp16 " << dev_loss["fp16"]);
  CHECK(dev_loss["fp32"] < 0.8);  // learned: the untrained model's loss is about log 25 = 3.2
  CHECK(std::abs(dev_loss["bf16"] - dev_loss["fp32"]) <= 0.04 * dev_loss["fp32"]);
  CHECK(std::abs(dev_loss["fp16"] - dev_loss["fp32"]) <= 0.04 * dev_loss["fp32"]);
}

TEST_CASE("train: fp16 skips an update whose gradients overflow and halves the loss scale", "[train]") {
  const Task task("fp16-overflow", 200);
  TrainConfig config = task.config();
  config.training.precision = "fp16";
  config.training.max_steps = 8;
  config.training.log_every = 1;
  config.training.loss_scale = 1024;
  config.training.loss_scale_window = 4;
  config.checkpoint.every_steps = 8;
  TrainOptions options = task.options("run");
  options.inject_overflow_at = {3};
  const TrainResult result = train(config, options);
  CHECK(result.step == 8);
  // The metrics: updates 1 and 2 at scale 1024, update 3 skipped (scale 512), then 4 good updates
  // double it back to 1024 (after update 6), and 2 more.
  std::vector<nlohmann::json> skipped, logged;
  for (const nlohmann::json& line : read_metrics(options.run_dir)) {
    (line.contains("loss") ? logged : skipped).push_back(line);
  }
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0]["step"] == 2);
  CHECK(skipped[0]["loss_scale"] == 512.0);
  CHECK(skipped[0]["skipped_updates"] == 1);
  REQUIRE(logged.size() == 8);
  const std::vector<double> scales = {1024, 1024, 512, 512, 512, 1024, 1024, 1024};
  for (std::size_t i = 0; i < logged.size(); ++i) {
    INFO("update " << i + 1);
    CHECK(logged[i]["step"] == static_cast<int>(i + 1));
    CHECK(logged[i]["loss_scale"] == scales[i]);
    CHECK(std::isfinite(logged[i]["loss"].get<double>()));
  }
  const TrainState state = load_train_state(checkpoint_state_path(options.run_dir, 8));
  CHECK(state.loss_scale == 1024);
  CHECK(state.skipped_steps == 1);
  CHECK(state.loss_scale_good_steps == 2);
}

TEST_CASE("train: fp16 stops with a clear error when the loss scale would fall below its minimum", "[train]") {
  const Task task("fp16-minimum", 200);
  TrainConfig config = task.config();
  config.training.precision = "fp16";
  config.training.max_steps = 4;
  config.training.loss_scale = 2;
  config.training.min_loss_scale = 1;
  TrainOptions options = task.options("run");
  options.inject_overflow_at = {2, 3};
  CHECK_THROWS_WITH(train(config, options), Contains("update 3 overflowed in fp16 at the smallest loss scale") &&
                                                Contains("training.precision"));
}

TEST_CASE("train: a run stopped by a signal saves its state and resumes bit-identically", "[train]") {
  const Task task("signal", 200);
  const TrainConfig config = resume_config(task);
  const TrainOptions straight = task.options("straight");
  train(config, straight);

  TrainOptions interrupted = task.options("interrupted");
  std::atomic<int> stop{0};
  interrupted.stop_signal = &stop;
  // Raise the "signal" as soon as the run has logged its first line (somewhere in steps 4..23).
  std::thread raiser([&] {
    const std::string metrics = interrupted.run_dir + "/metrics.jsonl";
    while (!fs::exists(metrics) || fs::file_size(metrics) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stop.store(15);
  });
  const TrainResult stopped = train(config, interrupted);
  raiser.join();
  if (stopped.interrupted) {
    CHECK(stopped.step < 24);
    // Between scheduled checkpoints (every 8 updates) the state goes to an interrupted checkpoint,
    // which `average-checkpoints --last N` never sees.
    const bool scheduled = stopped.step % 8 == 0;
    const CheckpointKind kind = scheduled ? CheckpointKind::kRegular : CheckpointKind::kInterrupted;
    CHECK(stopped.last_checkpoint == checkpoint_model_path(interrupted.run_dir, stopped.step, kind));
    CHECK(fs::exists(checkpoint_model_path(interrupted.run_dir, stopped.step, kind)));
    for (const std::int64_t step : checkpoint_steps(interrupted.run_dir)) CHECK(step % 8 == 0);
  }
  interrupted.stop_signal = nullptr;
  CHECK(train(config, interrupted).step == 24);
  CHECK(weights(checkpoint_model_path(interrupted.run_dir, 24)) ==
        weights(checkpoint_model_path(straight.run_dir, 24)));
}

TEST_CASE("train: a signal before the first update stops at once and saves no checkpoint", "[train]") {
  const Task task("early-signal", 200);
  TrainConfig config = task.config();
  config.data.vocabulary.clear();  // built in the run directory: the signal stops that too
  config.data.vocab_size = 25;
  TrainOptions options = task.options("run");
  std::atomic<int> stop{2};
  options.stop_signal = &stop;
  const TrainResult result = train(config, options);
  CHECK(result.interrupted);
  CHECK(result.step == 0);
  CHECK(result.last_checkpoint.empty());
  CHECK(resumable_checkpoints(options.run_dir).empty());
  CHECK(!fs::exists(options.run_dir + "/vocab.model"));
  // Not yet a run: the next start trains from scratch, with another config if need be.
  options.stop_signal = nullptr;
  config.model.d_ff = 48;
  config.training.max_steps = 2;
  CHECK(train(config, options).step == 2);
  CHECK(fs::exists(options.run_dir + "/vocab.model"));
}

TEST_CASE("train: a failed start leaves no run behind, and the corrected command proceeds", "[train]") {
  const Task task("typo", 200);
  TrainConfig config = task.config();
  config.training.max_steps = 2;
  const TrainOptions options = task.options("run");
  TrainConfig typo = config;
  typo.data.train_source = task.dir + "/trian.src";
  CHECK_THROWS_WITH(train(typo, options), Contains("trian.src"));
  CHECK(!fs::exists(options.run_dir));  // nothing written for a command that cannot run
  TrainConfig heads = config;
  heads.model.heads = 3;  // d_model 32 is not a multiple of 3
  CHECK_THROWS_WITH(train(heads, options), Contains("heads"));
  CHECK(!fs::exists(options.run_dir + "/config.yaml"));
  // All training pairs filtered out: fails after the run directory was prepared, before any checkpoint.
  TrainConfig filtered = config;
  filtered.data.max_length = 1;
  CHECK_THROWS_WITH(train(filtered, options), Contains("no training pairs left"));
  CHECK(fs::exists(options.run_dir + "/config.yaml"));
  TrainConfig fixed = config;
  fixed.model.d_ff = 48;  // another config is fine: the directory holds no checkpoint yet
  CHECK(train(fixed, options).step == 2);
}

TEST_CASE("train: a vocabulary built in the run directory is rebuilt when the data changes before a checkpoint",
          "[train]") {
  const Task task("stale-vocab", 200);
  TrainConfig config = task.config();
  config.data.vocabulary.clear();
  config.data.vocab_size = 25;
  config.data.max_length = 1;  // fails after the vocabulary is built
  const TrainOptions options = task.options("run");
  CHECK_THROWS_WITH(train(config, options), Contains("no training pairs left"));
  const std::string record = test::read_text(options.run_dir + "/vocab.json");
  const std::string first_vocab = test::read_text(options.run_dir + "/vocab.model");
  // The user fixes the data (lines with letters the first data lacked) and the filter: the
  // vocabulary is built again from it.
  std::string more_src, more_tgt;
  for (int i = 0; i < 50; ++i) {
    more_src += "k l m n o\n";
    more_tgt += "o n m l k\n";
  }
  test::write_text(task.train.source, test::read_text(task.train.source) + more_src);
  test::write_text(task.train.target, test::read_text(task.train.target) + more_tgt);
  config.data.max_length = 12;
  config.training.max_steps = 2;
  CHECK(train(config, options).step == 2);
  const std::string rebuilt = test::read_text(options.run_dir + "/vocab.json");
  CHECK(rebuilt != record);
  const std::string second_vocab = test::read_text(options.run_dir + "/vocab.model");
  CHECK(second_vocab != first_vocab);
  CHECK(!fs::exists(options.run_dir + "/vocab-build.tmp"));  // the scratch directory is gone
  CHECK(nlohmann::json::parse(rebuilt)["train_source"] == task.train.source);
  // Unchanged data: the vocabulary is reused (the record stays byte for byte).
  config.training.max_steps = 4;
  CHECK(train(config, options).step == 4);
  CHECK(test::read_text(options.run_dir + "/vocab.json") == rebuilt);
  CHECK(test::read_text(options.run_dir + "/vocab.model") == second_vocab);
}

TEST_CASE("train: a second trainer on the same run directory is refused, naming the holder", "[train]") {
  const Task task("lock", 200);
  TrainConfig config = task.config();
  config.training.max_steps = 2;
  const TrainOptions options = task.options("run");
  fs::create_directories(options.run_dir);
  {
    const RunLock held(options.run_dir);
    CHECK_THROWS_WITH(train(config, options), Contains("in use by another") && Contains("pid "));
  }
  CHECK(train(config, options).step == 2);  // released
}

TEST_CASE("train: a damaged newest checkpoint is set aside and the run resumes from the one before", "[train]") {
  const Task task("damaged", 200);
  TrainConfig config = task.config();
  config.training.max_steps = 6;
  config.checkpoint.every_steps = 2;
  const TrainOptions straight = task.options("straight");
  train(config, straight);
  const TrainOptions options = task.options("run");
  TrainConfig first = config;
  first.training.max_steps = 4;
  train(first, options);
  const std::string newest = checkpoint_model_path(options.run_dir, 4);
  fs::resize_file(newest, fs::file_size(newest) / 2);  // a crash or a full disk
  TrainConfig same_length = first;
  const TrainResult again = train(same_length, options);
  CHECK(again.resumed_from == 2);
  CHECK(again.step == 4);
  CHECK(weights(checkpoint_model_path(options.run_dir, 4)) == weights(checkpoint_model_path(straight.run_dir, 4)));
  // Damaged again, and resumed by a run that is already finished at step 2: checkpoint-last now
  // names step 2, not the damaged file.
  fs::resize_file(newest, fs::file_size(newest) / 2);
  first.training.max_steps = 2;
  CHECK(train(first, options).already_finished);
  CHECK(weights(options.run_dir + "/checkpoints/checkpoint-last.safetensors") ==
        weights(checkpoint_model_path(options.run_dir, 2)));
  const TrainResult resumed = train(config, options);
  CHECK(resumed.resumed_from == 2);
  CHECK(resumed.step == 6);
  CHECK(fs::exists(newest + ".damaged"));
  CHECK(weights(checkpoint_model_path(options.run_dir, 6)) == weights(checkpoint_model_path(straight.run_dir, 6)));
  CHECK(checkpoint_steps(options.run_dir) == std::vector<std::int64_t>{2, 4, 6});
}

TEST_CASE("train: a run whose every checkpoint is damaged is refused, never restarted from scratch", "[train]") {
  const Task task("all-damaged", 200);
  TrainConfig config = task.config();
  config.training.max_steps = 4;
  config.checkpoint.every_steps = 2;
  const TrainOptions options = task.options("run");
  train(config, options);
  for (const std::int64_t step : {2, 4}) fs::resize_file(checkpoint_model_path(options.run_dir, step), 100);
  config.training.max_steps = 6;
  CHECK_THROWS_WITH(train(config, options), Contains("no loadable checkpoint") && Contains("--overwrite"));
  CHECK(!fs::exists(checkpoint_model_path(options.run_dir, 6)));
  CHECK(fs::exists(checkpoint_model_path(options.run_dir, 4) + ".damaged"));
}

TEST_CASE("train: weights made non-finite by Adam are never saved", "[train]") {
  const Task task("inf-weights", 200);
  TrainConfig config = task.config();
  config.training.max_steps = 2;
  config.checkpoint.every_steps = 2;
  const TrainOptions options = task.options("run");
  train(config, options);
  // A learning rate beyond float's range: the first update's Adam step overflows the weights to
  // infinity while its loss and gradients were finite; the checkpoint due at that step is refused.
  config.training.lr_factor = 1e300;
  config.training.max_steps = 4;
  config.checkpoint.every_steps = 1;
  CHECK_THROWS_WITH(train(config, options), Contains("made the weights non-finite") && Contains("step 2"));
  CHECK(checkpoint_steps(options.run_dir) == std::vector<std::int64_t>{2});
  CHECK(resumable_checkpoints(options.run_dir).size() == 1);
}

TEST_CASE("train: a non-finite gradient stops the run before Adam, keeping the last good checkpoint", "[train]") {
  const Task task("nan", 200);
  TrainConfig config = task.config();
  config.training.max_steps = 4;
  config.checkpoint.every_steps = 4;
  const TrainOptions options = task.options("run");
  train(config, options);
  const std::vector<float> good = weights(checkpoint_model_path(options.run_dir, 4));
  // Resumed with an absurd learning rate (allowed to change between restarts): the weights blow up
  // within a few updates and the loss or gradient norm stops being finite.
  TrainConfig diverging = config;
  diverging.training.lr_factor = 1e30;
  diverging.training.max_steps = 40;
  CHECK_THROWS_WITH(train(diverging, options), Contains("non-finite") && Contains("stopping without applying it"));
  CHECK(checkpoint_steps(options.run_dir) == std::vector<std::int64_t>{4});
  CHECK(resumable_checkpoints(options.run_dir).size() == 1);
  CHECK(weights(checkpoint_model_path(options.run_dir, 4)) == good);
  // A lower learning rate resumes from the last good checkpoint.
  CHECK(train(config, options).already_finished);
  config.training.max_steps = 6;
  CHECK(train(config, options).step == 6);
}

TEST_CASE("train: a finished run says so instead of training on", "[train]") {
  const Task task("finished", 200);
  TrainConfig config = task.config();
  config.training.max_steps = 2;
  const TrainOptions options = task.options("run");
  const TrainResult first = train(config, options);
  CHECK(!first.already_finished);
  CHECK(first.resumed_from == -1);
  const TrainResult again = train(config, options);
  CHECK(again.already_finished);
  CHECK(again.step == 2);
  CHECK(again.last_checkpoint.empty());
}

TEST_CASE("train: a run directory holding another config is refused unless overwritten", "[train]") {
  const Task task("rundir", 200);
  TrainConfig config = task.config();
  config.training.max_steps = 2;
  TrainOptions options = task.options("run");
  train(config, options);
  TrainConfig other = config;
  other.model.d_ff = 48;
  CHECK_THROWS_WITH(train(other, options), Contains("another config") && Contains("model.d_ff: 64 -> 48"));
  // Run length and logging may change between restarts.
  TrainConfig longer = config;
  longer.training.max_steps = 4;
  longer.training.log_every = 1;
  CHECK(train(longer, options).step == 4);
  options.overwrite = true;
  CHECK(train(other, options).step == 2);  // started afresh
  CHECK(!fs::exists(checkpoint_model_path(options.run_dir, 4)));
}

TEST_CASE("train: with best_metric bleu, checkpoint-best is the validation with the highest BLEU", "[train]") {
  const Task task("best-bleu", 500);
  TrainConfig config = task.config();
  config.training.max_steps = 200;
  config.training.valid_every = 40;
  config.training.valid_bleu = true;
  config.training.valid_beam = 1;
  config.training.best_metric = "bleu";
  const TrainOptions options = task.options("run");
  const TrainResult result = train(config, options);
  double best = -1;
  std::int64_t best_step = 0;
  int validations = 0;
  for (const nlohmann::json& line : read_metrics(options.run_dir)) {
    if (!line.contains("valid_bleu")) continue;
    ++validations;
    if (line["valid_bleu"].get<double>() > best) {
      best = line["valid_bleu"].get<double>();
      best_step = line["step"].get<std::int64_t>();
    }
  }
  CHECK(validations == 5);
  CHECK(result.best_valid_bleu == best);
  CHECK(load_train_state(checkpoint_state_path(options.run_dir, 200)).best_step == best_step);
  model::ModelFileInfo info;
  model::load_model(options.run_dir + "/checkpoints/checkpoint-best.safetensors", DType::kF32, &info);
  CHECK(info.step == best_step);
}

TEST_CASE("train: validation without improvement for `patience` rounds stops the run", "[train]") {
  const Task task("patience", 200);
  TrainConfig config = task.config();
  // A learning rate so small that no f32 weight the loss can feel moves: the dev loss stays exactly
  // the same, which is not an improvement.
  config.training.lr_factor = 1e-30;
  config.training.max_steps = 100;
  config.training.valid_every = 2;
  config.training.patience = 2;
  const TrainOptions options = task.options("run");
  const TrainResult result = train(config, options);
  CHECK(result.early_stopped);
  CHECK(result.step == 6);  // validations at 2 (best), 4 and 6 (no improvement: stop)
  CHECK(fs::exists(checkpoint_model_path(options.run_dir, 6)));
  const TrainState state = load_train_state(checkpoint_state_path(options.run_dir, 6));
  CHECK(state.best_step == 2);
  CHECK(state.validations == 3);
  CHECK(state.bad_validations == 2);
  CHECK(fs::exists(options.run_dir + "/checkpoints/checkpoint-best.safetensors"));
  // Started again, the early-stopped run is finished, not trained on.
  const TrainResult again = train(config, options);
  CHECK(again.already_finished);
  CHECK(again.early_stopped);
  CHECK(again.step == 6);
}

TEST_CASE("train: bad data is an error naming the file", "[train]") {
  const Task task("baddata", 50);
  TrainConfig config = task.config();
  test::write_text(task.dir + "/short.tgt", "a\nb\n");
  config.data.train_target = task.dir + "/short.tgt";
  CHECK_THROWS_WITH(train(config, task.options("run")), Contains("train.src has 50 lines") && Contains("short.tgt"));
  config.data.train_target = task.dir + "/missing.tgt";
  CHECK_THROWS_WITH(train(config, task.options("run2")), Contains("missing.tgt"));
  config = task.config();
  config.data.max_length = 40;  // + EOS over max_positions 16
  CHECK_THROWS_WITH(train(config, task.options("run3")), Contains("max_positions"));
}

TEST_CASE("train: k accumulated batches give the gradient of one batch k times larger", "[train]") {
  const Task task("accumulate", 64);
  const text::Vocabulary vocab = text::Vocabulary::load(task.vocab);
  data::CorpusOptions o;
  o.source = task.train.source;
  o.target = task.train.target;
  const data::EncodedCorpus corpus = data::load_parallel_corpus(o, vocab, "", 1);
  model::ModelConfig mc = task.config().model;
  mc.src_vocab_size = mc.tgt_vocab_size = vocab.size();
  mc.label_smoothing = 0.1;
  model::Transformer model(mc, DType::kF64);
  model.initialize(3);

  const std::vector<std::int64_t> a = {0, 1, 2, 3, 4}, b = {5, 6, 7}, c = {8, 9, 10, 11, 12, 13};
  std::vector<std::int64_t> all = a;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  const UpdateLoss split = accumulate_gradients(
      model, {data::make_batch(corpus, a, mc), data::make_batch(corpus, b, mc), data::make_batch(corpus, c, mc)}, false,
      0, 0);
  const std::vector<double> split_grads = model.parameters().grads().to_vector<double>();
  const UpdateLoss whole = accumulate_gradients(model, {data::make_batch(corpus, all, mc)}, false, 0, 0);
  const std::vector<double> whole_grads = model.parameters().grads().to_vector<double>();

  CHECK(split.tokens == whole.tokens);
  CHECK(split.loss_sum == Approx(whole.loss_sum).epsilon(1e-12));
  CHECK(split.nll_sum == Approx(whole.nll_sum).epsilon(1e-12));
  double worst = 0, largest = 0;
  for (std::size_t i = 0; i < whole_grads.size(); ++i) {
    worst = std::max(worst, std::abs(split_grads[i] - whole_grads[i]));
    largest = std::max(largest, std::abs(whole_grads[i]));
  }
  CHECK(largest > 1e-3);
  CHECK(worst <= 1e-12 * largest);
}

}  // namespace dragoman::train
