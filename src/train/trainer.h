// The training loop (DESIGN.md "Training"): parallel text -> vocabulary (built if not given) ->
// encoded, filtered, cached corpus -> token-budget batches shuffled per epoch -> forward/backward
// with label smoothing and dropout -> gradients accumulated over update_freq batches and normalised
// by the update's target tokens -> optional clipping -> Adam with the Noam schedule -> logs,
// metrics.jsonl, validation, checkpoints.
//
// A run directory holds everything: config.yaml (the resolved config, data paths absolute),
// vocab.model and vocab.json (when the vocabulary is built here, with what it was built from), the
// corpus caches, train.log, metrics.jsonl, valid-translations/ (with valid_bleu), train.lock, and
// checkpoints/checkpoint-STEP.safetensors (a model file: weights, config, vocabulary) with
// checkpoint-STEP.state.safetensors (Adam moments, data position, validation history), the
// interrupted-STEP.* pair a signal leaves (run_dir.h), plus checkpoint-last / checkpoint-best.
// Running the same command again resumes from the newest loadable checkpoint; a resumed CPU run is
// bit-identical to an uninterrupted one.
//
// Everything the run needs is checked before anything is written (config, model config, data
// files, vocabulary), and a directory becomes a run only with its first checkpoint: until then a
// corrected command simply starts it again.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "train/config.h"
#include "train/run_dir.h"

namespace dragoman::train {

struct TrainOptions {
  std::string run_dir;
  bool overwrite = false;  // start afresh in a run directory that holds another run
  // A status line on a terminal's standard error below the log (io/status_line.h), redrawn after
  // updates: the updates done of those planned, the epoch, the last logged loss, the ETA.
  bool progress_bar = true;
  // Set asynchronously (SIGINT/SIGTERM): vocabulary building and corpus encoding stop at once, the
  // loop after the current update; a trained model is saved as an interrupted checkpoint, then
  // train returns. nullptr: never.
  const std::atomic<int>* stop_signal = nullptr;
  // Tests only: the updates (1-based) whose gradients are made infinite after the backward pass,
  // as an fp16 overflow would make them.
  std::vector<std::int64_t> inject_overflow_at;
  // Tests only: {global worker rank, update (1-based)} at which that worker's gradient computation
  // throws, as a failing device would; {-1, -1}: never.
  std::pair<std::int64_t, std::int64_t> fail_worker_at{-1, -1};
  // Tests only: the gradient norm read one update late (as on a GPU, where it is the default) in a
  // CPU run: the norm and clipping factor stay with the gradients, Adam applies the factor, and
  // the host checks the norm after the next update's gradients (trainer.cpp).
  bool defer_grad_norm = false;
  // Tests only: > 0 makes the time budget's clock (training.max_minutes) step x this many seconds,
  // validations and checkpoints free: the count a budget fixes is then known in advance.
  double simulated_update_seconds = 0;
};

struct TrainResult {
  std::int64_t step = 0;
  bool interrupted = false;
  int stop_signal = 0;  // the signal that stopped the run (received by any of its processes); 0: none
  bool early_stopped = false;
  bool budget_spent = false;       // training.max_minutes ran out before the run's other ends
  bool already_finished = false;   // the run had reached its end before this call; nothing was trained
  std::int64_t resumed_from = -1;  // the step of the checkpoint this call resumed from (-1: a fresh start)
  std::string last_checkpoint;     // the model file saved last by this call ("": none)
  double last_train_loss = 0;      // label-smoothed loss per target token over the last log window
  double best_valid_nll = 0;       // per target token, when validation ran
  double best_valid_bleu = 0;      // when validation scored BLEU
};

// Trains (or resumes) the run in options.run_dir. In fp32 and bf16, a non-finite loss or gradient
// norm stops the run with an Error naming the update, which Adam does not apply (on a GPU the host
// learns it one update late, before anything is logged or saved); the last checkpoint stays the
// last good one. In fp16 such an update is skipped and the loss scale halved (an Error
// once it would go below training.min_loss_scale).
TrainResult train(const TrainConfig& config, const TrainOptions& options);

}  // namespace dragoman::train
