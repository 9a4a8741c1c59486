// What a run writes as it goes (see trainer_impl.h): metrics, log lines, checkpoints, validations.
#include "train/trainer_impl.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "data/batching.h"
#include "decode/translator.h"
#include "device/cpu/threads.h"
#include "eval/bleu.h"
#include "eval/corpus_score.h"
#include "io/atomic_file.h"
#include "io/status_line.h"
#include "model/checkpoint.h"
#include "ops/elementwise.h"

namespace dragoman::train::detail {

namespace {

std::string step_name(std::int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "%08lld", static_cast<long long>(step));
  return name;
}

// Keeps the newest `keep` files of a directory whose names sort by age.
void keep_newest_files(const fs::path& dir, std::size_t keep) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (std::size_t i = 0; i + keep < files.size(); ++i) fs::remove(files[i]);
}

}  // namespace

void Trainer::append_metrics(const nlohmann::json& line) {
  if (!writer_) return;
  std::ofstream out(fs::path(run_) / "metrics.jsonl", std::ios::app);
  out << line.dump() << "\n";
  if (!out) throw Error("cannot append to " + (fs::path(run_) / "metrics.jsonl").string());
}

// Model and state file of the current step, then checkpoint-last; the older files go only once the
// new ones are complete. A regular checkpoint replaces every interrupted one and keeps the newest
// keep_last regular ones; an interrupted one replaces the previous interrupted one only.
void Trainer::save_checkpoint(CheckpointKind kind) {
  settle_grad_norm();  // a non-finite last update stops the run before anything is saved
  require_finite_weights();
  const std::string model_path = checkpoint_model_path(run_, state_.step, kind);
  const std::string state_path = checkpoint_state_path(run_, state_.step, kind);
  model::ModelFileInfo info = file_info_;
  info.step = state_.step;
  model::save_model(model_path, *model_, info);
  const fs::path dir = fs::path(run_) / "checkpoints";
  if (state_.ema.defined()) {  // the moving average as a model file of its own, before the state
    swap_ema();
    model::save_model(ema_model_path(model_path), *model_, info);
    swap_ema();
  }
  save_train_state(state_path, state_);
  link_atomically(model_path, (dir / "checkpoint-last.safetensors").string());
  link_atomically(state_path, (dir / "checkpoint-last.state.safetensors").string());
  if (state_.ema.defined()) {
    link_atomically(ema_model_path(model_path), (dir / "checkpoint-last.ema.safetensors").string());
  }
  for (const CheckpointRef& old : resumable_checkpoints(run_)) {
    if (old.kind == CheckpointKind::kInterrupted && !(kind == old.kind && old.step == state_.step)) {
      fs::remove(checkpoint_model_path(run_, old.step, old.kind));
      fs::remove(ema_model_path(checkpoint_model_path(run_, old.step, old.kind)));
      fs::remove(checkpoint_state_path(run_, old.step, old.kind));
    }
  }
  if (kind == CheckpointKind::kRegular) {
    const std::vector<std::int64_t> steps = checkpoint_steps(run_);
    for (std::size_t i = 0; i + static_cast<std::size_t>(config_.checkpoint.keep_last) < steps.size(); ++i) {
      fs::remove(checkpoint_model_path(run_, steps[i]));
      fs::remove(ema_model_path(checkpoint_model_path(run_, steps[i])));
      fs::remove(checkpoint_state_path(run_, steps[i]));
    }
  }
  saved_step_ = state_.step;
  last_saved_ = model_path;
  last_save_ = Clock::now();
  spdlog::info("train: saved checkpoint at step {} ({})", state_.step, model_path);
}

// Translates the dev set with the current model (the paper's decoding: GNMT alpha 0.6, at most
// source + 50 tokens; beam training.valid_beam), writes the translations to
// valid-translations/STEP.txt (the newest checkpoint.keep_last are kept) and valid-translation.txt
// (the latest), and returns their sacreBLEU (13a, exp smoothing) against the references.
double Trainer::translate_valid() {
  // Batches of training's size in tokens; on a GPU at least translate's (the dev set in a few).
  decode::TranslatorOptions o = decode::TranslatorOptions::for_device(device_);
  o.search.beam = static_cast<int>(config_.training.valid_beam);
  o.batch_tokens = device_.is_cpu() ? config_.training.max_tokens
                                    : std::max<std::int64_t>(o.batch_tokens, config_.training.max_tokens);
  const decode::Translator translator(*model_, *vocab_, o);
  std::vector<std::vector<std::int32_t>> sources;
  for (std::int64_t i = 0; i < valid_.size(); ++i) sources.push_back(valid_.src(i));
  const std::vector<decode::Translation> translations = translator.translate_ids(std::move(sources));
  std::string text;
  eval::Corpus corpus;
  corpus.refs.emplace_back(valid_references_.begin(), valid_references_.end());
  for (const decode::Translation& t : translations) {
    text += t.nbest.front().text + "\n";
    corpus.hyps.emplace_back(t.nbest.front().text);  // views into `translations`, alive until the score
  }
  const fs::path kept = fs::path(run_) / "valid-translations";
  fs::create_directories(kept);
  const fs::path step_file = kept / (step_name(state_.step) + ".txt");
  io::write_file_atomically(step_file.string(), text);
  link_atomically(step_file.string(), (fs::path(run_) / "valid-translation.txt").string());
  keep_newest_files(kept, static_cast<std::size_t>(config_.checkpoint.keep_last));
  return eval::corpus_score(eval::Bleu(eval::BleuOptions{}), corpus, cpu::compute_threads()).score;
}

// With a moving average (training.ema_decay) validation judges it, not the last weights: its loss
// and BLEU are reported, and checkpoint-best holds it.
void Trainer::validate(TrainResult& result) {
  settle_grad_norm();
  if (!state_.ema.defined()) return validate_model(result);
  swap_ema();
  try {
    validate_model(result);
  } catch (...) {
    swap_ema();
    throw;
  }
  swap_ema();
}

void Trainer::start_ema() {
  const double decay = config_.training.ema_decay;
  if (decay == 0) {
    state_.ema = Tensor();  // (a run that had one and turned it off)
    return;
  }
  const Tensor& weights = model_->parameters().values();
  if (!state_.ema.defined()) {  // a new run, or one that turns it on: from the weights as they are
    state_.ema = weights.clone();
    if (state_.step > 0) spdlog::info("train: the moving average of the weights starts at step {}", state_.step);
    return;
  }
  if (state_.ema.numel() != weights.numel() || state_.ema.dtype() != weights.dtype()) {
    throw Error("train: the checkpoint's moving average does not match the model's weights");
  }
  state_.ema = state_.ema.to(weights.device());
}

void Trainer::update_ema() {
  // ema = decay * ema + (1 - decay) * weights, element by element (the same on every device).
  const double decay = config_.training.ema_decay;
  Tensor share = model_->parameters().values().clone();
  ops::scale_(share, 1.0 - decay);
  ops::scale_(state_.ema, decay);
  ops::add_(state_.ema, share);
}

void Trainer::swap_ema() {
  model::ParameterSet& params = model_->parameters();
  const Tensor weights = params.values().clone();
  params.values().copy_from(state_.ema);
  state_.ema.copy_from(weights);
  params.refresh_compute_values();
}

void Trainer::validate_model(TrainResult& result) {
  const TrainingConfig& t = config_.training;
  // The dev set's loss sums stay on the model's device until the last batch (keeps no activations).
  Tensor sums = Tensor::zeros({2}, DType::kF64, model_->parameters().values().device());
  std::int64_t tokens = 0;
  try {
    for (const auto& pairs : data::make_token_batches(valid_, config_.training.max_tokens, 0, 0)) {
      model::ForwardOptions options;
      options.loss_sums = &sums;
      tokens += model_->loss(on_device(data::make_batch(valid_, pairs, model_->config()), device_), options).tokens;
    }
  } catch (const OutOfMemory& e) {
    fail_out_of_memory(e, "validation after update " + std::to_string(state_.step));
  }
  const std::vector<double> host = sums.to_vector<double>();
  const double loss = host[0], nll = host[1];
  const double valid_nll = nll / static_cast<double>(tokens);
  const Clock::time_point bleu_start = Clock::now();
  const double bleu = t.valid_bleu ? translate_valid() : 0.0;
  const double bleu_seconds = seconds_since(bleu_start);
  // Both bests are tracked; best_metric says which one makes checkpoint-best and counts for patience.
  const bool first = state_.validations == 0;
  const bool nll_improved = first || valid_nll < state_.best_valid_loss;
  const bool bleu_improved = t.valid_bleu && (first || bleu > state_.best_valid_bleu);
  if (nll_improved) state_.best_valid_loss = valid_nll;
  if (bleu_improved) state_.best_valid_bleu = bleu;
  const bool improved = t.best_metric == "bleu" ? bleu_improved : nll_improved;
  ++state_.validations;
  if (improved) {
    state_.best_step = state_.step;
    state_.bad_validations = 0;
    require_finite_weights();
    model::ModelFileInfo info = file_info_;
    info.step = state_.step;
    model::save_model((fs::path(run_) / "checkpoints" / "checkpoint-best.safetensors").string(), *model_, info);
  } else {
    ++state_.bad_validations;
  }
  result.best_valid_nll = state_.best_valid_loss;
  result.best_valid_bleu = state_.best_valid_bleu;
  const std::string bleu_text =
      t.valid_bleu ? fmt::format(" | bleu {:.2f} (beam {}, {:.1f} s)", bleu, t.valid_beam, bleu_seconds) : "";
  const std::string best_text = t.best_metric == "bleu" ? fmt::format("bleu {:.2f}", state_.best_valid_bleu)
                                                        : fmt::format("nll {:.4f}", state_.best_valid_loss);
  spdlog::info("valid step {} | loss {:.4f} | nll {:.4f} | ppl {:.2f}{} | best {} at step {}{}", state_.step,
               loss / static_cast<double>(tokens), valid_nll, std::exp(valid_nll), bleu_text, best_text,
               state_.best_step, improved ? " (new best)" : "");
  nlohmann::json metrics = {{"step", state_.step},
                            {"valid_loss", loss / static_cast<double>(tokens)},
                            {"valid_nll", valid_nll},
                            {"valid_ppl", std::exp(valid_nll)},
                            {"valid_tokens", tokens}};
  if (t.valid_bleu) metrics["valid_bleu"] = bleu;
  append_metrics(metrics);
}

// The log line and metrics record of a log window (the writer's).
void Trainer::log_window(double loss, double nll, double lr, double grad_norm, double tokens_per_second,
                         double seconds_per_step, double tokens_per_update) {
  const double ppl = std::exp(nll);
  const double left = eta_seconds(seconds_per_step);
  const std::string eta = left >= 0 ? format_hms(left) : std::string("-");
  // On a GPU, the device allocator's high-water mark (worker 0's): what training.max_tokens costs.
  const double peak_mib =
      device_.is_cpu() ? 0.0 : static_cast<double>(allocator_for(device_).stats().peak_reserved) / (1 << 20);
  const std::string memory = device_.is_cpu() ? "" : fmt::format(" | {:.0f} MiB", peak_mib);
  spdlog::info(
      "step {} | epoch {} | loss {:.4f} | ppl {:.2f} | lr {:.3e} | gnorm {:.3f} | {:.0f} tgt tok/s{} | "
      "elapsed {} | ETA {}",
      state_.step, state_.epoch + 1, loss, ppl, lr, grad_norm, tokens_per_second, memory,
      format_hms(state_.elapsed_seconds), eta);
  nlohmann::json metrics = {{"step", state_.step},
                            {"epoch", state_.epoch + 1},
                            {"loss", loss},
                            {"ppl", ppl},
                            {"lr", lr},
                            {"gnorm", grad_norm},
                            {"tgt_tokens_per_s", tokens_per_second},
                            {"tgt_tokens_per_update", tokens_per_update},
                            {"elapsed_s", state_.elapsed_seconds}};
  if (!device_.is_cpu()) metrics["device_memory_mib"] = peak_mib;
  if (config_.training.precision == "fp16") {
    metrics["loss_scale"] = state_.loss_scale;
    metrics["skipped_updates"] = state_.skipped_steps;
  }
  append_metrics(metrics);
  bar_loss_ = loss;
  bar_tokens_per_second_ = tokens_per_second;
}

double Trainer::eta_seconds(double seconds_per_step) const {
  // The updates left of a known count, or the time left of a budget, whichever is sooner.
  const TrainingConfig& t = config_.training;
  double left = -1;
  if (const std::int64_t planned = planned_steps(); planned > 0) {
    left = seconds_per_step * static_cast<double>(std::max<std::int64_t>(0, planned - state_.step));
  }
  if (t.max_minutes > 0) {
    const double budget_left = std::max(0.0, t.max_minutes * 60 - budget_clock());
    left = left < 0 ? budget_left : std::min(left, budget_left);
  }
  return left;
}

void Trainer::show_progress(double seconds_per_step, bool now) {
  if (!writer_ || !options_.progress_bar || !io::StatusLine::on_terminal()) return;
  const double clock = seconds_since(loop_start_);
  if (!now && bar_drawn_ >= 0 && clock - bar_drawn_ < 0.2) return;
  bar_drawn_ = clock;
  const TrainingConfig& t = config_.training;
  // The most telling first (a narrow terminal cuts the end): the bar (the updates done of a known
  // count, else the time budget spent), the loss, the ETA, then the epoch and the speed.
  std::string text = "train ";
  const std::int64_t planned = planned_steps();
  if (planned > 0) {
    text += io::progress_bar(static_cast<double>(state_.step) / static_cast<double>(planned), 20) +
            fmt::format(" {}/{} updates", state_.step, planned);
  } else if (t.max_minutes > 0) {
    text += io::progress_bar(budget_clock() / (t.max_minutes * 60), 20) + fmt::format(" {} updates", state_.step);
  } else {
    text += fmt::format("{} updates", state_.step);
  }
  if (bar_loss_ >= 0) text += fmt::format(" | loss {:.4f}", bar_loss_);
  const double left = eta_seconds(seconds_per_step);
  text += " | ETA " + (left >= 0 && seconds_per_step > 0 ? format_hms(left) : std::string("-"));
  text += fmt::format(" | epoch {}", state_.epoch + 1);
  if (bar_tokens_per_second_ >= 0) text += fmt::format(" | {:.0f} tok/s", bar_tokens_per_second_);
  io::StatusLine::show(text);
}

}  // namespace dragoman::train::detail
