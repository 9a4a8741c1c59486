// The time budget of a run (training.max_minutes; see budget.h and trainer_impl.h): its clock, the
// calibration that fixes the number of updates, the schedule and checkpoints that follow from it.
#include "train/trainer_impl.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "train/budget.h"
#include "train/schedule.h"

namespace dragoman::train::detail {

namespace {

std::string minutes_text(double minutes) { return fmt::format("{:g}-minute", minutes); }

}  // namespace

// At the loop's start: the clock, and what the budget does in this run. A count fixed before (the
// state says so) keeps ruling the schedule even if training.max_minutes changed since.
void Trainer::start_budget() {
  const TrainingConfig& t = config_.training;
  loop_start_ = Clock::now();
  start_elapsed_ = state_.elapsed_seconds;
  loop_started_ = true;
  budget_seconds_ = t.max_minutes * 60.0;
  budget_fixes_count_ = decays_to_zero(t.lr_decay) && (t.max_minutes > 0 || state_.budget_updates > 0);
  if (state_.budget_updates > 0) {
    if (t.max_minutes != state_.budget_minutes) {
      spdlog::warn(
          "train: this run fixed its length at {} updates for a {} budget; training.max_minutes is {} now: the "
          "count and its schedule stay, the new budget only stops the run when it is spent",
          state_.budget_updates, minutes_text(state_.budget_minutes), t.max_minutes);
    } else {
      spdlog::info("train: {} updates fit the {} budget (fixed at update {})", state_.budget_updates,
                   minutes_text(state_.budget_minutes), state_.budget_fixed_at);
    }
  } else if (budget_fixes_count_) {
    spdlog::info(
        "train: a {} budget with lr_decay {}: the pace is measured over {:.0f}-{:.0f} % of the budget, then the "
        "updates that fit are fixed",
        minutes_text(t.max_minutes), t.lr_decay, kCalibrationOpens * 100, kCalibrationCloses * 100);
  }
}

// The budget's clock: the run's training time so far (all restarts, validations and checkpoints
// included; before the loop starts, what the state recorded), or the simulated one of the tests.
double Trainer::budget_clock() const {
  if (options_.simulated_update_seconds > 0) {
    return static_cast<double>(state_.step) * options_.simulated_update_seconds;
  }
  return loop_started_ ? start_elapsed_ + seconds_since(loop_start_) : state_.elapsed_seconds;
}

bool Trainer::budget_spent() const { return budget_seconds_ > 0 && budget_clock() >= budget_seconds_; }

// The number of updates the run will make, when known (0: not known; for the ETA and the schedule).
std::int64_t Trainer::planned_steps() const {
  if (state_.budget_updates > 0) return state_.budget_updates;
  if (budget_fixes_count_) return 0;
  return config_.training.max_steps;
}

double Trainer::learning_rate_at(std::int64_t step) const {
  const TrainingConfig& t = config_.training;
  const std::int64_t d_model = config_.model.d_model;
  if (!budget_fixes_count_) {
    return learning_rate(step, d_model, t.warmup_steps, t.lr, t.lr_factor, t.lr_decay, t.max_steps, t.lr_hold);
  }
  return budget_learning_rate(step, d_model, t.warmup_steps, t.lr, t.lr_factor, t.lr_decay, state_.budget_updates,
                              state_.budget_fixed_at, t.max_steps, t.lr_hold);
}

// Regular checkpoints: every checkpoint.every_minutes, and every checkpoint.every_steps counted
// from the start, or, when a budget fixes the count, back from its last update (so that the last
// K checkpoints always span the annealed end; none on a step count before the count is fixed).
bool Trainer::checkpoint_due() const {
  const CheckpointConfig& c = config_.checkpoint;
  if (c.every_minutes > 0 && seconds_since(last_save_) >= c.every_minutes * 60) return true;
  if (c.every_steps <= 0) return false;
  if (!budget_fixes_count_) return state_.step % c.every_steps == 0;
  return state_.budget_updates > 0 && (state_.budget_updates - state_.step) % c.every_steps == 0;
}

// After each update (the writer's): opens the calibration window, and when it closes times one
// validation and one checkpoint (made anyway: they are the run's first), then fixes the count; with
// a held peak, fixes it again later (refine_budget).
void Trainer::calibrate_budget(TrainResult& result) {
  if (!writer_ || !budget_fixes_count_) return;
  if (state_.budget_updates > 0) {
    refine_budget();
    return;
  }
  const TrainingConfig& t = config_.training;
  const double now = budget_clock();
  if (calibration_step_ < 0) {
    if (now >= kCalibrationOpens * budget_seconds_ && updates_here_ >= 2) {
      calibration_step_ = state_.step;
      calibration_clock_ = now;
      calibration_tokens_ = state_.tokens_seen;
    }
    return;
  }
  const std::int64_t updates = state_.step - calibration_step_;
  if (now < kCalibrationCloses * budget_seconds_ || updates < kCalibrationUpdates) return;
  const bool simulated = options_.simulated_update_seconds > 0;
  BudgetInputs in;
  in.budget_seconds = budget_seconds_;
  in.step = state_.step;
  in.update_seconds = (now - calibration_clock_) / static_cast<double>(updates);
  const double tokens_per_second =
      static_cast<double>(state_.tokens_seen - calibration_tokens_) / (now - calibration_clock_);
  in.valid_every = has_valid_ ? t.valid_every : 0;
  if (in.valid_every > 0) {
    const Clock::time_point begin = Clock::now();
    validate(result);
    in.validation_seconds = simulated ? 0.0 : seconds_since(begin);
  }
  if (saved_step_ != state_.step) {
    const Clock::time_point begin = Clock::now();
    save_checkpoint(CheckpointKind::kRegular);
    in.checkpoint_seconds = simulated ? 0.0 : seconds_since(begin);
  }
  in.checkpoint_every = config_.checkpoint.every_steps;
  in.checkpoint_every_minutes = config_.checkpoint.every_minutes;
  in.max_steps = t.max_steps;
  in.elapsed_seconds = budget_clock();
  const std::int64_t fit = updates_that_fit(in);
  state_.budget_updates = std::max(fit, state_.step);
  state_.budget_fixed_at = state_.step;
  state_.budget_minutes = t.max_minutes;
  fixed_here_ = true;
  fix_validation_seconds_ = in.validation_seconds;
  fix_checkpoint_seconds_ = in.checkpoint_seconds;
  // The checkpoint just written is the run's state at this update: it records the count too.
  if (saved_step_ == state_.step) {
    save_train_state(checkpoint_state_path(run_, state_.step, CheckpointKind::kRegular), state_);
  }
  const bool capped = t.max_steps > 0 && state_.budget_updates == t.max_steps;
  spdlog::info(
      "train: {} updates fit the {} budget at {:.0f} target tokens/s ({:.3f} s an update over updates {}-{}{}{}){}",
      state_.budget_updates, minutes_text(t.max_minutes), tokens_per_second, in.update_seconds, calibration_step_ + 1,
      state_.step, in.valid_every > 0 ? fmt::format(", a validation {:.1f} s", in.validation_seconds) : "",
      fmt::format(", a checkpoint {:.2f} s", in.checkpoint_seconds),
      capped ? fmt::format("; training.max_steps {} comes first", t.max_steps) : "");
  append_metrics({{"step", state_.step},
                  {"budget_updates", state_.budget_updates},
                  {"budget_minutes", t.max_minutes},
                  {"calibration_update_seconds", in.update_seconds},
                  {"calibration_tgt_tokens_per_s", tokens_per_second},
                  {"calibration_validation_seconds", in.validation_seconds},
                  {"calibration_checkpoint_seconds", in.checkpoint_seconds}});
}

// With a held peak (training.lr_hold): once the budget's clock passes kRefineAt, the count is fixed
// again by the pace of the updates since kRefineOpens (this process's validations and checkpoints
// left out, then added back as the first fix timed them), keeping kRefineReserve free. Only while
// the learning rate is still held under both counts, so that no update made so far would have had
// another rate: the run stays the max_steps run of its final count. A pace that slowed so much that
// the decay should have begun already decays from the next update. Made once (the state records
// it), and only by the process that made the first fix (a resumed one keeps the count it has).
void Trainer::refine_budget() {
  const TrainingConfig& t = config_.training;
  if (t.lr_hold <= 0 || state_.budget_refined_at > 0 || !fixed_here_) return;
  const double now = budget_clock();
  if (refine_step_ < 0) {
    if (now >= kRefineOpens * budget_seconds_) {
      refine_step_ = state_.step;
      refine_clock_ = now;
      refine_pauses_ = pause_seconds_;
    }
    return;
  }
  const std::int64_t updates = state_.step - refine_step_;
  if (now < kRefineAt * budget_seconds_ || updates < kRefineUpdates) return;
  const std::int64_t warmup = t.warmup_steps, fixed_at = state_.budget_fixed_at, before = state_.budget_updates;
  state_.budget_refined_at = state_.step;  // (decided now, whatever the outcome)
  const auto held = [&](std::int64_t total) {
    return budget_rate_held(state_.step, warmup, total, fixed_at, t.lr_hold) &&
           budget_decays_from_warmup(total, fixed_at, warmup) == budget_decays_from_warmup(before, fixed_at, warmup);
  };
  if (!held(before)) return;
  const bool simulated = options_.simulated_update_seconds > 0;
  BudgetInputs in;
  in.budget_seconds = budget_seconds_;
  in.elapsed_seconds = now;
  in.step = state_.step;
  in.update_seconds =
      (now - refine_clock_ - (simulated ? 0.0 : pause_seconds_ - refine_pauses_)) / static_cast<double>(updates);
  in.valid_every = has_valid_ ? t.valid_every : 0;
  in.validation_seconds = fix_validation_seconds_;
  in.checkpoint_every = config_.checkpoint.every_steps;
  in.checkpoint_every_minutes = config_.checkpoint.every_minutes;
  in.checkpoint_seconds = fix_checkpoint_seconds_;
  in.max_steps = t.max_steps;
  in.reserve = kRefineReserve;
  if (!(in.update_seconds > 0)) return;
  std::int64_t total = std::max(updates_that_fit(in), state_.step);
  if (!held(total)) {
    // The least count that keeps every update so far held (held grows with the count).
    std::int64_t low = total, high = before;
    while (high - low > 1) {
      const std::int64_t mid = low + (high - low) / 2;
      (held(mid) ? high : low) = mid;
    }
    total = high;
  }
  settle_grad_norm();  // (once a run: nothing is logged after an update whose norm is unchecked)
  state_.budget_updates = total;
  spdlog::info(
      "train: {} updates fit the {} budget at the pace of updates {}-{} ({:.3f} s an update; {} fixed at update {})",
      total, minutes_text(t.max_minutes), refine_step_ + 1, state_.step, in.update_seconds, before, fixed_at);
  append_metrics({{"step", state_.step},
                  {"budget_refined_updates", total},
                  {"budget_updates_before", before},
                  {"refine_update_seconds", in.update_seconds}});
}

}  // namespace dragoman::train::detail
