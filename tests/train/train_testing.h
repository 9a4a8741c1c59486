// What the data and training tests share: scratch directories, files, a synthetic "reverse the
// letters" corpus, and a small vocabulary whose pieces are whole letters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/vocabulary.h"
#include "train/config.h"
#include "train/trainer.h"

namespace dragoman::test {

// A fresh, empty directory under the system's temporary directory (unique per process and name),
// removed when the test process exits (kept with DRAGOMAN_KEEP_TEST_DIRS set).
std::string scratch_dir(const std::string& name);

void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);
// The lines of a text file, without their '\n'.
std::vector<std::string> read_lines(const std::string& path);

// `lines` sentences of 3..7 letters from a..j separated by spaces; the target is the source
// reversed. Written to DIR/NAME.src and DIR/NAME.tgt (deterministic in seed).
struct ReversalFiles {
  std::string source, target;
};
ReversalFiles write_reversal_corpus(const std::string& dir, const std::string& name, int lines, std::uint32_t seed);

// A BPE vocabulary over the letters a..j whose 25 pieces are the specials, the characters and
// "▁a" .. "▁j" (one piece per word), saved as DIR/letters.model.
std::string write_letters_vocabulary(const std::string& dir);

// A tiny training config for the reversal task (2+2 layers, d_model 32) on the given files.
train::TrainConfig tiny_reversal_config(const ReversalFiles& train, const ReversalFiles& valid,
                                        const std::string& vocab);

// The reversal task in a scratch directory: `lines` training pairs, 100 dev pairs, the letters
// vocabulary, and run directories under it.
struct ReversalTask {
  std::string dir;
  ReversalFiles train, valid;
  std::string vocab;
  explicit ReversalTask(const std::string& name, int lines = 2000);
  train::TrainConfig config() const { return tiny_reversal_config(train, valid, vocab); }
  train::TrainOptions options(const std::string& run) const;
};

// The lines of RUN/metrics.jsonl.
std::vector<nlohmann::json> read_metrics(const std::string& run_dir);
// The f32 weights of a model file.
std::vector<float> weights(const std::string& path);

// A config where resuming has the most to get wrong: dropout, label smoothing, accumulation over
// 2 batches, clipping, epochs crossed (200 pairs), validation BLEU deciding the best checkpoint, and
// a few checkpoints.
train::TrainConfig resume_config(const ReversalTask& task);

// Trains `config` straight to its max_steps (run "straight"), and again stopped halfway and resumed
// (run "resumed"): the two runs must agree bit for bit (weights, Adam moments, data position,
// history, metrics). Catch2 checks.
void check_resume_is_bit_identical(const ReversalTask& task, train::TrainConfig config);

}  // namespace dragoman::test
