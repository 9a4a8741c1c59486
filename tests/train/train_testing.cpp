#include "train/train_testing.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "base/error.h"
#include "model/checkpoint.h"
#include "train/run_dir.h"
#include "train/train_state.h"

namespace dragoman::test {

namespace {

// The scratch directories this test process made, removed when it exits (kept with
// DRAGOMAN_KEEP_TEST_DIRS set, to look at a failure's files).
struct ScratchDirs {
  ~ScratchDirs() {
    if (std::getenv("DRAGOMAN_KEEP_TEST_DIRS") != nullptr) return;
    for (const auto& dir : dirs) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
  std::set<std::filesystem::path> dirs;
};

ScratchDirs& scratch_dirs() {
  static ScratchDirs made;
  return made;
}

}  // namespace

std::string scratch_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("dragoman_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  scratch_dirs().dirs.insert(dir);
  return dir.string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw Error("test: cannot write " + path);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("test: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> read_lines(const std::string& path) {
  std::istringstream in(read_text(path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

ReversalFiles write_reversal_corpus(const std::string& dir, const std::string& name, int lines, std::uint32_t seed) {
  std::string src, tgt;
  std::uint32_t state = seed * 2654435761u + 1;
  const auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state >> 16;
  };
  for (int i = 0; i < lines; ++i) {
    const int n = 3 + static_cast<int>(next() % 5);
    std::string letters;
    for (int k = 0; k < n; ++k) letters.push_back(static_cast<char>('a' + next() % 10));
    for (int k = 0; k < n; ++k) {
      src += (k ? " " : "") + std::string(1, letters[k]);
      tgt += (k ? " " : "") + std::string(1, letters[n - 1 - k]);
    }
    src += "\n";
    tgt += "\n";
  }
  ReversalFiles files{dir + "/" + name + ".src", dir + "/" + name + ".tgt"};
  write_text(files.source, src);
  write_text(files.target, tgt);
  return files;
}

std::string write_letters_vocabulary(const std::string& dir) {
  std::string text;
  for (int repeat = 0; repeat < 20; ++repeat) {
    for (char c = 'a'; c <= 'j'; ++c)
      text += std::string(1, c) + " " + std::string(1, static_cast<char>('a' + (c - 'a' + repeat) % 10)) + "\n";
  }
  const std::string input = dir + "/letters.txt";
  write_text(input, text);
  text::VocabularyOptions o;
  o.inputs = {input};
  o.model_type = "bpe";
  o.vocab_size = 25;
  o.threads = 1;
  text::Vocabulary::train(o).save(dir + "/letters");
  return dir + "/letters.model";
}

train::TrainConfig tiny_reversal_config(const ReversalFiles& train, const ReversalFiles& valid,
                                        const std::string& vocab) {
  train::TrainConfig c;
  c.model.encoder_layers = c.model.decoder_layers = 2;
  c.model.d_model = 32;
  c.model.d_ff = 64;
  c.model.heads = 2;
  c.model.dropout = 0.0;
  c.model.label_smoothing = 0.0;
  c.model.max_positions = 16;
  c.data.train_source = train.source;
  c.data.train_target = train.target;
  c.data.valid_source = valid.source;
  c.data.valid_target = valid.target;
  c.data.vocabulary = vocab;
  c.data.max_length = 12;
  c.training.max_tokens = 800;
  c.training.max_steps = 500;
  c.training.lr_factor = 0.3;
  c.training.warmup_steps = 100;
  c.training.log_every = 20;
  c.training.valid_every = 100;
  c.training.threads = 1;
  c.checkpoint.every_steps = 100;
  c.checkpoint.every_minutes = 0;
  return c;
}

ReversalTask::ReversalTask(const std::string& name, int lines)
    : dir(scratch_dir(name)),
      train(write_reversal_corpus(dir, "train", lines, 1)),
      valid(write_reversal_corpus(dir, "valid", 100, 2)),
      vocab(write_letters_vocabulary(dir)) {}

train::TrainOptions ReversalTask::options(const std::string& run) const {
  train::TrainOptions o;
  o.run_dir = dir + "/" + run;
  return o;
}

std::vector<nlohmann::json> read_metrics(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

std::vector<float> weights(const std::string& path) {
  return model::load_model(path).parameters().values().to_vector<float>();
}

train::TrainConfig resume_config(const ReversalTask& task) {
  train::TrainConfig c = task.config();
  c.model.dropout = 0.1;
  c.model.attention_dropout = 0.1;
  c.model.label_smoothing = 0.1;
  c.training.update_freq = 2;
  c.training.clip_norm = 1.0;
  c.training.max_steps = 24;
  c.training.log_every = 4;
  c.training.valid_every = 8;
  c.checkpoint.every_steps = 8;
  c.training.valid_bleu = true;  // the best BLEU and the step it decides resume too
  c.training.valid_beam = 2;
  c.training.best_metric = "bleu";
  return c;
}

void check_resume_is_bit_identical(const ReversalTask& task, train::TrainConfig config) {
  config.training.threads = 2;  // same thread count in both runs (OpenBLAS may round differently on others)
  const std::int64_t steps = config.training.max_steps;
  const train::TrainOptions straight = task.options("straight");
  train::train(config, straight);

  // Stopped halfway (a checkpoint is written at the end), then resumed.
  const train::TrainOptions resumed = task.options("resumed");
  train::TrainConfig first = config;
  first.training.max_steps = steps / 2;
  CHECK(train::train(first, resumed).step == steps / 2);
  CHECK(train::train(config, resumed).step == steps);

  CHECK(weights(train::checkpoint_model_path(resumed.run_dir, steps)) ==
        weights(train::checkpoint_model_path(straight.run_dir, steps)));
  const train::TrainState a = train::load_train_state(train::checkpoint_state_path(straight.run_dir, steps));
  const train::TrainState b = train::load_train_state(train::checkpoint_state_path(resumed.run_dir, steps));
  CHECK(a.adam_m.to_vector<float>() == b.adam_m.to_vector<float>());
  CHECK(a.adam_v.to_vector<float>() == b.adam_v.to_vector<float>());
  CHECK(a.epoch == b.epoch);
  CHECK(a.epoch > 0);  // the run crossed epochs
  CHECK(a.batch_index == b.batch_index);
  CHECK(a.tokens_seen == b.tokens_seen);
  CHECK(a.best_valid_loss == b.best_valid_loss);
  CHECK(a.best_valid_bleu == b.best_valid_bleu);
  CHECK(a.best_step == b.best_step);
  // The resumed run's metrics are those of the uninterrupted run, step for step.
  const auto strip_speed = [](std::vector<nlohmann::json> lines) {
    for (auto& line : lines) {
      line.erase("tgt_tokens_per_s");
      line.erase("elapsed_s");
    }
    return lines;
  };
  CHECK(strip_speed(read_metrics(resumed.run_dir)) == strip_speed(read_metrics(straight.run_dir)));
  CHECK(a.loss_scale == b.loss_scale);
  CHECK(a.skipped_steps == b.skipped_steps);
  // The moving average of the weights (training.ema_decay), and its model file.
  REQUIRE(a.ema.defined() == (config.training.ema_decay > 0));
  REQUIRE(b.ema.defined() == a.ema.defined());
  if (a.ema.defined()) {
    CHECK(a.ema.to_vector<float>() == b.ema.to_vector<float>());
    CHECK(weights(train::ema_model_path(train::checkpoint_model_path(resumed.run_dir, steps))) ==
          weights(train::ema_model_path(train::checkpoint_model_path(straight.run_dir, steps))));
  }
}

}  // namespace dragoman::test
