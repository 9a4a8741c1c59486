// The paper's learning-rate schedule (Vaswani et al. 2017, section 5.3, "Noam"): linear warmup for
// `warmup` steps, then decay with the inverse square root of the step:
//   lr(step) = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5),   step >= 1
// The peak is at step = warmup: factor * (d_model * warmup)^-0.5 (7.0e-4 for the base model).
// The same curve given by its peak (fairseq's inverse_sqrt, Marian's --lr with --lr-decay-inv-sqrt):
//   lr(step) = peak * min(step / warmup, sqrt(warmup / step))
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace dragoman::train {

inline double noam_learning_rate(std::int64_t step, std::int64_t d_model, std::int64_t warmup, double factor) {
  const double s = static_cast<double>(std::max<std::int64_t>(step, 1));
  return factor / std::sqrt(static_cast<double>(d_model)) *
         std::min(1.0 / std::sqrt(s), s * std::pow(static_cast<double>(warmup), -1.5));
}

inline double inverse_sqrt_learning_rate(std::int64_t step, std::int64_t warmup, double peak) {
  const double s = static_cast<double>(std::max<std::int64_t>(step, 1));
  const double w = static_cast<double>(warmup);
  return peak * std::min(s / w, std::sqrt(w / s));
}

// The learning rate of `step` for a training config: the peak `lr` when it is set (> 0), else the
// paper's Noam schedule with `lr_factor`.
inline double learning_rate(std::int64_t step, std::int64_t d_model, std::int64_t warmup, double lr, double lr_factor) {
  return lr > 0 ? inverse_sqrt_learning_rate(step, warmup, lr) : noam_learning_rate(step, d_model, warmup, lr_factor);
}

// The share of a decay from update `start` to `end` still ahead at `step`, after a hold of `hold`
// (in [0, 1)) of the updates between them: 1 or more while the starting value is still held.
inline double decay_share_left(std::int64_t step, std::int64_t start, std::int64_t end, double hold) {
  return static_cast<double>(end - step) / (static_cast<double>(end - start) * (1.0 - hold));
}

// From `from` at update `start` down to 0 at `end`, linear or half a cosine, after `from` held for
// `hold` (in [0, 1)) of the updates between them; 0 after `end`.
inline double decay_to_zero(double from, std::int64_t step, std::int64_t start, std::int64_t end, double hold,
                            const std::string& decay) {
  const double left = std::clamp(decay_share_left(step, start, end, hold), 0.0, 1.0);
  return decay == "linear" ? from * left : from * 0.5 * (1.0 - std::cos(3.14159265358979323846 * left));
}

// After the warmup, training.lr_decay: "inverse_sqrt" (the paper, above), "constant" (the peak held:
// fine-tuning's usual schedule, Hugging Face's constant_with_warmup), or a decay to zero at
// `max_steps` from the same peak, "linear" (fairseq's polynomial_decay, power 1) or "cosine"
// (half a cosine period, without restarts). For a fixed budget of updates the last two anneal:
// the final updates are small, and the last checkpoint is the better for it. `hold` in [0, 1)
// (training.lr_hold) holds the peak for that share of the updates after the warmup and decays
// over the rest (fairseq's tri_stage; "warmup-stable-decay"); 0 decays from the warmup's end.
inline bool decays_to_zero(const std::string& decay) { return decay == "linear" || decay == "cosine"; }

inline double learning_rate(std::int64_t step, std::int64_t d_model, std::int64_t warmup, double lr, double lr_factor,
                            const std::string& decay, std::int64_t max_steps, double hold = 0.0) {
  if (decay == "inverse_sqrt" || step <= warmup) return learning_rate(step, d_model, warmup, lr, lr_factor);
  if (decay == "constant") return learning_rate(warmup, d_model, warmup, lr, lr_factor);
  return decay_to_zero(learning_rate(warmup, d_model, warmup, lr, lr_factor), step, warmup, max_steps, hold, decay);
}

// Whether a time budget's count `total`, fixed at update `fixed_at`, gives exactly the schedule of
// max_steps = total (fixed inside the warmup, total beyond it) rather than a decay from the value at
// fixed_at (budget_learning_rate below).
inline bool budget_decays_from_warmup(std::int64_t total, std::int64_t fixed_at, std::int64_t warmup) {
  return total > warmup && fixed_at <= warmup;
}

// A decaying schedule under a time budget (training.max_minutes, train/budget.h), where the number
// of updates, `total`, is fixed at update `fixed_at` by the run's measured pace (0: not yet), capped
// at max_steps (0: none).
//  - Not yet fixed: the max_steps schedule above when max_steps is set (a run that reaches max_steps
//    before its calibration ends still anneals), else the warmup, then the peak held.
//  - Fixed at or before the warmup's end with total > warmup: exactly the schedule above with
//    max_steps = total (and the same hold).
//  - Otherwise (fixed after the warmup, or a budget shorter than the warmup): the value at
//    fixed_at held for `hold` of the updates left, then down to 0 at total, linear or half a cosine.
inline double budget_learning_rate(std::int64_t step, std::int64_t d_model, std::int64_t warmup, double lr,
                                   double lr_factor, const std::string& decay, std::int64_t total,
                                   std::int64_t fixed_at, std::int64_t max_steps, double hold = 0.0) {
  const auto provisional = [&](std::int64_t s) {
    return max_steps > warmup ? learning_rate(s, d_model, warmup, lr, lr_factor, decay, max_steps, hold)
                              : learning_rate(std::min(s, warmup), d_model, warmup, lr, lr_factor);
  };
  if (total <= 0 || step <= fixed_at) return provisional(step);
  if (budget_decays_from_warmup(total, fixed_at, warmup)) {
    return learning_rate(step, d_model, warmup, lr, lr_factor, decay, total, hold);
  }
  return decay_to_zero(provisional(std::max<std::int64_t>(fixed_at, 1)), step, fixed_at, total, hold, decay);
}

// Whether budget_learning_rate at `step` (a count `total` fixed at `fixed_at`) is still the warmup's
// or the held value: the same for a larger count fixed at the same update. A count can then be
// fixed again (a longer or shorter one, train/budget.h) without changing any update made so far,
// provided this holds for both counts.
inline bool budget_rate_held(std::int64_t step, std::int64_t warmup, std::int64_t total, std::int64_t fixed_at,
                             double hold) {
  if (total <= 0 || step <= fixed_at) return true;
  const bool from_warmup = budget_decays_from_warmup(total, fixed_at, warmup);
  if (from_warmup && step <= warmup) return true;
  // (decay_to_zero's clamp gives exactly 1 from this share on)
  return decay_share_left(step, from_warmup ? warmup : fixed_at, total, hold) >= 1.0;
}

}  // namespace dragoman::train
