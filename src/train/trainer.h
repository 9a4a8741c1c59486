// The training loop (DESIGN.md "Training"): parallel text -> vocabulary (built if not given) ->
// encoded, filtered, cached corpus -> token-budget batches shuffled per epoch -> forward/backward
// with label smoothing and dropout -> gradients accumulated over update_freq batches and normalised
// by the update's target tokens -> optional clipping -> Adam with the Noam schedule -> logs,
// metrics.jsonl, validation, checkpoints.
//
// A run directory holds everything: config.yaml (the resolved config), vocab.model (when built
// here), the corpus caches, metrics.jsonl, and checkpoints/checkpoint-STEP.safetensors (a model
// file: weights, config, vocabulary) with checkpoint-STEP.state.safetensors (Adam moments, data
// position, validation history), plus checkpoint-last / checkpoint-best (hard links). Running the
// same command again resumes from the newest complete checkpoint; a resumed CPU run is
// bit-identical to an uninterrupted one.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "train/config.h"

namespace dragoman {

struct TrainOptions {
  std::string run_dir;
  bool overwrite = false;  // start afresh in a run directory that holds another run
  // Set asynchronously (SIGINT/SIGTERM): the loop finishes the current update, saves a checkpoint
  // and returns. nullptr: never.
  const std::atomic<int>* stop_signal = nullptr;
};

struct TrainResult {
  std::int64_t step = 0;
  bool interrupted = false;
  bool early_stopped = false;
  double last_train_loss = 0;  // label-smoothed loss per target token over the last log window
  double best_valid_nll = 0;   // per target token, when validation ran
  double best_valid_bleu = 0;  // when validation scored BLEU
};

TrainResult train(const TrainConfig& config, const TrainOptions& options);

// The steps of the run directory's complete checkpoints (model and state file), ascending.
std::vector<std::int64_t> checkpoint_steps(const std::string& run_dir);

// The run directory's checkpoint files for `step`.
std::string checkpoint_model_path(const std::string& run_dir, std::int64_t step);
std::string checkpoint_state_path(const std::string& run_dir, std::int64_t step);

}  // namespace dragoman
