// What stops or skips an update (see trainer_impl.h): non-finite losses, gradients and weights, memory,
// fp16 overflows and the loss scale.
#include "train/trainer_impl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "ops/elementwise.h"

namespace dragoman::train::detail {

// What a run that stops on an error leaves to resume from.
std::string Trainer::last_good_state() const {
  return last_saved_.empty() && saved_step_ < 0
             ? std::string("no checkpoint was written yet")
             : "the last checkpoint (step " + std::to_string(saved_step_) +
                   ", checkpoints/checkpoint-last.safetensors) is the last good state";
}

// A non-finite loss or gradient norm never reaches Adam: the run stops, and its newest checkpoint
// (written before this update) is the last good state. The loss is known when the norm was read at
// once; the deferred norm (trainer_impl.h) reports the update's norm alone (Adam did not apply it:
// its factor was NaN; nothing after it has been logged or saved).
void Trainer::fail_non_finite(std::int64_t update, double grad_norm, std::optional<double> loss) const {
  const std::string what = loss ? fmt::format("{} (loss {}, gradient norm {})",
                                              std::isfinite(*loss) ? "gradient norm" : "loss", *loss, grad_norm)
                                : fmt::format("gradient norm ({})", grad_norm);
  throw Error(fmt::format(
      "train: update {} gave a non-finite {}; stopping without applying it, {}. Lower the learning rate "
      "(training.lr_factor or training.lr), lengthen training.warmup_steps or set training.clip_norm, then run the "
      "same command to resume",
      update, what, last_good_state()));
}

// The norm of the update whose gradients Adam took last, once the host has it (one update late on
// a GPU); fails there if it was not finite. Without a deferred norm pending, the last one checked.
double Trainer::settle_grad_norm() {
  if (pending_update_ == 0) return settled_norm_;
  const std::int64_t update = pending_update_;
  pending_update_ = 0;
  if (pending_norm_.device().is_cpu()) {
    settled_norm_ = pending_norm_.to_vector<double>()[0];
  } else if constexpr (kWithCuda) {
    settled_norm_ = static_cast<const double*>(norm_readback_->wait())[0];
  }
  if (!std::isfinite(settled_norm_)) fail_non_finite(update, settled_norm_, std::nullopt);
  return settled_norm_;
}

// A batch that does not fit: the message says which key to lower (the allocator's says how much
// was asked for and how much is in use). Nothing is applied or saved; the last checkpoint stands.
void Trainer::fail_out_of_memory(const OutOfMemory& e, const std::string& during) const {
  const TrainingConfig& t = config_.training;
  const std::string advice =
      t.tokens_per_update > 0
          ? "Lower training.max_tokens (training.tokens_per_update keeps the tokens per update: the accumulation "
            "follows; max_tokens defines the run: start it in a new --run, or use --overwrite)"
          : "Lower training.max_tokens, and raise training.update_freq by the same factor to keep the tokens per "
            "update (both define the run: start it in a new --run, or use --overwrite)";
  throw Error(
      fmt::format("train: {} ran out of memory on {} with batches of training.max_tokens {} tokens a side ({}). "
                  "{}; {}",
                  during, device_.str(), t.max_tokens, e.what(), advice, last_good_state()));
}

// Adam can overflow weights even from finite gradients (an absurd learning rate): such weights are
// never saved, so the newest checkpoint stays the last good state.
void Trainer::require_finite_weights() const {
  if (std::isfinite(ops::sum_squares(model_->parameters().values()))) return;
  throw Error(fmt::format(
      "train: update {} made the weights non-finite; stopping without saving them. The last checkpoint (step {}) is "
      "the last good state. Lower the learning rate (training.lr_factor or training.lr), lengthen "
      "training.warmup_steps or set training.clip_norm, then run the same command to resume",
      state_.step, saved_step_));
}

// Tests only (TrainOptions::inject_overflow_at): the gradients of a listed update become infinite
// once, as an fp16 overflow makes them.
void Trainer::inject_overflow_for_tests() {
  const std::int64_t update = state_.step + 1;
  const auto& at = options_.inject_overflow_at;
  if (std::find(at.begin(), at.end(), update) == at.end() || !injected_overflows_.insert(update).second) return;
  Tensor& grads = model_->parameters().grads();
  const Tensor inf = Tensor::from_vector(std::vector<double>{std::numeric_limits<double>::infinity()}, {1});
  grads.narrow(0, 0, 1).copy_from(inf.to(grads.dtype()).to(grads.device()));
}

// fp16: an update whose loss or gradients overflowed is not applied; the loss scale is halved (the
// data it used stays consumed, as in fairseq and PyTorch's GradScaler).
void Trainer::skip_overflowed_update(double loss, double grad_norm) {
  const TrainingConfig& t = config_.training;
  const double scale = state_.loss_scale;
  if (scale / 2 < t.min_loss_scale) {
    throw Error(fmt::format(
        "train: update {} overflowed in fp16 at the smallest loss scale (training.min_loss_scale {}; loss {}, "
        "gradient norm {}): the gradients are not finite at any scale. Train in bf16 or fp32 "
        "(training.precision), or lower the learning rate, then run the same command to resume",
        state_.step + 1, t.min_loss_scale, loss, grad_norm));
  }
  state_.loss_scale = scale / 2;
  state_.loss_scale_good_steps = 0;
  ++state_.skipped_steps;
  spdlog::warn(
      "train: update {} overflowed in fp16 (loss {}, gradient norm {}) at loss scale {}: skipped, scale now {}",
      state_.step + 1, loss, grad_norm, scale, state_.loss_scale);
  append_metrics({{"step", state_.step}, {"skipped_updates", state_.skipped_steps}, {"loss_scale", state_.loss_scale}});
}

// fp16: after training.loss_scale_window updates without overflow the loss scale doubles.
void Trainer::grow_loss_scale() {
  if (++state_.loss_scale_good_steps < config_.training.loss_scale_window) return;
  state_.loss_scale *= 2;
  state_.loss_scale_good_steps = 0;
  spdlog::debug("train: loss scale now {}", state_.loss_scale);
}

}  // namespace dragoman::train::detail
