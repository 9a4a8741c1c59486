// training.max_minutes: a wall-clock budget for the training loop (docs/TRAINING.md, "A time
// budget"). The budget's clock is the run's training time (TrainState::elapsed_seconds: the loop,
// validations and checkpoints included, summed over restarts; building the vocabulary and encoding
// the corpus are not counted). With a decaying learning rate (linear, cosine) the run measures its
// own pace over a calibration window early in the budget, then fixes the number of updates that fits
// (updates_that_fit), records it in the training state and decays to zero at it
// (schedule.h: budget_learning_rate); with inverse_sqrt the budget only stops the run.
#pragma once

#include <cstdint>

namespace dragoman::train {

// The calibration window, in the budget's clock: it opens at the end of the first update past
// kCalibrationOpens of the budget (the first updates are slow: kernels and buffers are made then)
// and at least 2 updates into this process, and closes at the end of the first update past
// kCalibrationCloses with at least kCalibrationUpdates updates in it.
inline constexpr double kCalibrationOpens = 0.01;
inline constexpr double kCalibrationCloses = 0.08;
inline constexpr std::int64_t kCalibrationUpdates = 5;
// Kept free at the end of the budget: the pace after the window was up to 7 % (10 minutes) and 14 %
// (1 minute) slower than in it on 2 threads of the development machine; what the reserve does not
// cover ends the run a little before its count, at a small learning rate.
inline constexpr double kBudgetReserve = 0.05;
// With a held peak (training.lr_hold) the count is fixed once more, at the end of the first update
// past kRefineAt of the budget, by the pace of the updates since the first update past
// kRefineOpens (at least kRefineUpdates of them, in the process that made the first fix), leaving
// kRefineReserve free: a window of minutes predicts the rest well, and while the learning rate is
// still held (schedule.h: budget_rate_held) a new count changes no update made so far. (The window
// starts late to leave out the first epoch's curriculum, data.curriculum: its sentences grow from
// short to long, and so does an update's time. On the demo's slow stand-in the curriculum ends at
// about 30 % of the budget, the decay begins at about 66 %.)
inline constexpr double kRefineOpens = 0.35;
inline constexpr double kRefineAt = 0.55;
inline constexpr double kRefineReserve = 0.02;
inline constexpr std::int64_t kRefineUpdates = 20;

struct BudgetInputs {
  double budget_seconds = 0;
  double elapsed_seconds = 0;   // the budget's clock now
  std::int64_t step = 0;        // updates done now
  double update_seconds = 0;    // measured: one update
  double validation_seconds = 0;  // measured: one validation (0: none in this run)
  double checkpoint_seconds = 0;  // measured: one checkpoint
  std::int64_t valid_every = 0;   // updates (0: no validation)
  std::int64_t checkpoint_every = 0;      // updates, counted back from the last (0: none but the last)
  double checkpoint_every_minutes = 0;    // (0: none)
  std::int64_t max_steps = 0;             // a cap (0: none)
  double reserve = kBudgetReserve;        // the share of the budget kept free
};

// The predicted clock at the end of update `total` (> inputs.step): the updates, the validations at
// multiples of valid_every, the checkpoints at total, total - every, total - 2 every, ... and the
// timed ones.
double budget_seconds_at(const BudgetInputs& inputs, std::int64_t total);

// The largest total >= inputs.step whose predicted end leaves inputs.reserve of the budget free,
// capped at max_steps; inputs.step when no further update fits.
std::int64_t updates_that_fit(const BudgetInputs& inputs);

}  // namespace dragoman::train
