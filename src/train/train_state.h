// What resuming a training run needs besides the model: the optimizer's moments and where the run
// stands (step, position in the data, validation history). Saved beside each model file as
// checkpoint-STEP.state.safetensors (format "dragoman-train-state"): tensors adam_m and adam_v
// (flat, the parameter buffer's layout) and the rest in __metadata__. Written atomically.
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace dragoman::train {

struct TrainState {
  std::int64_t step = 0;         // updates done
  std::int64_t epoch = 0;        // current epoch (0-based)
  std::int64_t batch_index = 0;  // next batch of the epoch's plan
  std::int64_t tokens_seen = 0;  // target tokens trained on
  double elapsed_seconds = 0;    // training time before this process
  double best_valid_loss = 0;    // the lowest dev NLL per target token; valid only when validations > 0
  double best_valid_bleu = 0;    // the highest dev BLEU (when training.valid_bleu is on)
  std::int64_t validations = 0;
  std::int64_t bad_validations = 0;  // since the best
  std::int64_t best_step = 0;
  // fp16's dynamic loss scaling (0 before an fp16 update): the scale, updates since it last
  // changed, and updates skipped because their gradients overflowed.
  double loss_scale = 0;
  std::int64_t loss_scale_good_steps = 0;
  std::int64_t skipped_steps = 0;
  // Global batches per update: data-parallel workers x update_freq (0: a state file from before
  // data parallelism). A run resumes on any number of workers that keeps it.
  std::int64_t batches_per_update = 0;
  // A time budget (training.max_minutes, budget.h) with a decaying learning rate: the updates that
  // fit it, fixed after update budget_fixed_at by the measured pace (0: not yet), and the budget
  // they were fixed for. The schedule is a function of them and the step from then on. With a held
  // peak the count is fixed once more while the rate is held (budget.h: kRefineAt), after update
  // budget_refined_at (0: not yet); budget_fixed_at stays the first fix's (the schedule's).
  std::int64_t budget_updates = 0;
  std::int64_t budget_fixed_at = 0;
  double budget_minutes = 0;
  std::int64_t budget_refined_at = 0;
  Tensor adam_m, adam_v;  // [parameters]
  Tensor ema;             // [parameters], f32: the weights' moving average (training.ema_decay; else undefined)
};

void save_train_state(const std::string& path, const TrainState& state);
// Throws dragoman::Error naming the file when it is not a state file or is damaged.
TrainState load_train_state(const std::string& path);

}  // namespace dragoman::train
