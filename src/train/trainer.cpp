// The training loop (see trainer.h; the Trainer's other parts: trainer_impl.h).
#include "train/trainer_impl.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "base/error.h"
#include "base/json_diff.h"
#include "data/batching.h"
#include "device/cpu/threads.h"
#include "io/status_line.h"
#include "ops/elementwise.h"
#include "train/accumulation.h"
#include "train/optimizer.h"
#include "train/schedule.h"

namespace dragoman::train::detail {

namespace {

// While it lives, everything logged also goes to RUN/train.log (appended across restarts).
class RunLogFile {
 public:
  explicit RunLogFile(const std::string& path)
      : sink_(std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false)) {
    sink_->set_pattern("[%Y-%m-%d %H:%M:%S] %l: %v");
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~RunLogFile() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  RunLogFile(const RunLogFile&) = delete;
  RunLogFile& operator=(const RunLogFile&) = delete;

 private:
  std::shared_ptr<spdlog::sinks::basic_file_sink_mt> sink_;
};

// While it lives, only errors are logged: the processes of a multi-process run other than process
// 0, which logs for the run.
class QuietLog {
 public:
  QuietLog() : level_(spdlog::get_level()) { spdlog::set_level(spdlog::level::err); }
  ~QuietLog() { spdlog::set_level(level_); }
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;

 private:
  spdlog::level::level_enum level_;
};

}  // namespace

TrainResult Trainer::run() {
  const TrainingConfig& t = config_.training;
  DType compute = DType::kF32;
  parse_precision(t.precision, compute);  // validated by TrainConfig::validate
  precision_ = model::ParameterPrecision::training(compute);
  const bool fp16 = compute == DType::kF16;
  config_.make_paths_absolute();
  run_ = options_.run_dir;
  check_inputs();
  const int threads = cpu::resolve_threads(static_cast<int>(t.threads), "train: training.threads");
  worker_threads_ = device_.is_cpu() ? std::max(1, threads / static_cast<int>(devices_.size())) : threads;
  // fp16 decides on the host (an overflowed update is skipped, the loss scale halved), Muon takes
  // its gradients scaled: both keep the norm read at once. On the CPU that read costs nothing.
  defer_grad_norm_ = !fp16 && t.optimizer != "muon" && (!device_.is_cpu() || options_.defer_grad_norm);
  cpu::set_compute_threads(worker_threads_);
  std::optional<RunLock> lock;
  std::optional<RunLogFile> log_file;
  std::optional<QuietLog> quiet;
  comm_ = make_communicator(devices_, processes_);
  // A batch that misses training.tokens_per_update is refused before anything is written or encoded
  // (settle_batches_per_update applies it once the run's state is known).
  resolve_accumulation(config_.training, comm_->world_size());
  if (writer_) {
    fs::create_directories(run_);
    lock.emplace(run_);
    if (options_.overwrite) {
      for (const char* name : kRunFiles) fs::remove_all(fs::path(run_) / name);
    }
    log_file.emplace((fs::path(run_) / "train.log").string());  // from here on, everything logged is kept
    if (options_.overwrite) spdlog::warn("train: --overwrite: removed the previous run in {}", run_);
    prepare_run_dir();
    // The log shows what this run changes; the whole resolved config is the run directory's.
    spdlog::info("train: config {}/config.yaml; what differs from the defaults:\n{}", run_,
                 to_yaml(json_changes(TrainConfig{}.to_json(), config_.to_json())));
  } else {
    quiet.emplace();  // process 0 logs for the run
  }

  TrainResult result;
  try {
    if (processes_.size > 1 && !writer_) wait_for_writer();
    obtain_vocabulary();
    if (config_.training.init_from.empty()) file_info_.vocabulary = vocab_->bytes();
    resume_or_initialize();
    find_frozen_parameters();
    start_ema();
    const std::string reason = finished_reason();
    if (reason.empty()) {
      load_corpora();
      report_unknown_tokens();
    }
    if (processes_.size > 1 && writer_) wait_for_writer();
    if (!reason.empty()) {
      spdlog::info("train: the run in {} is already finished at step {} ({}); nothing to do", run_, state_.step,
                   reason);
      result.step = state_.step;
      result.resumed_from = resumed_from_;
      result.already_finished = true;
      result.early_stopped = reason.rfind("early", 0) == 0;
      return result;
    }
  } catch (const Interrupted&) {
    if (processes_.size > 1) throw;  // the other processes are waiting for this one: train() ends them
    spdlog::warn("train: stopped by a signal before the first update; no checkpoint written");
    result.interrupted = true;
    result.step = state_.step;
    return result;
  }
  start_workers();
  settle_batches_per_update();
  spdlog::info("train: {} parameters on {} in {}, {} training pairs", model_->parameters().size(),
               config_.training.devices, t.precision, train_.size());

  std::vector<std::vector<std::int64_t>> plan = epoch_plan(state_.epoch);
  start_budget();
  const Clock::time_point start = loop_start_;
  const std::int64_t start_step = state_.step;
  const double start_elapsed = start_elapsed_;
  Clock::time_point window_start = Clock::now();
  // The log window's loss and nll sums stay where each worker is and are summed and read once per
  // log line.
  std::vector<Tensor> window_sums, update_sums;
  for (const Device& d : devices_) {
    window_sums.push_back(Tensor::zeros({2}, DType::kF64, d));
    update_sums.push_back(Tensor::zeros({2}, DType::kF64, d));
  }
  std::int64_t window_tokens = 0, window_updates = 0;
  double grad_norm = 0;
  // The status line ends with the loop, however it ends (log lines after it start below it).
  struct EndStatusLine {
    ~EndStatusLine() { io::StatusLine::finish(); }
  } end_status_line;
  const auto seconds_per_step = [&] {
    return state_.step > start_step ? seconds_since(start) / static_cast<double>(state_.step - start_step) : 0.0;
  };

  while (true) {
    if (t.max_steps > 0 && state_.step >= t.max_steps) break;
    if (t.max_epochs > 0 && state_.epoch >= t.max_epochs) break;
    if (state_.budget_updates > 0 && state_.step >= state_.budget_updates) break;  // the count the budget fixed
    agree_on_stop(result);
    if (result.interrupted || result.early_stopped || result.budget_spent) break;
    const std::vector<std::vector<std::int64_t>> update = next_update(plan);
    if (update.empty()) break;

    if (fp16 && state_.loss_scale == 0) state_.loss_scale = t.loss_scale;
    const double loss_scale = fp16 ? state_.loss_scale : 1.0;
    for (Tensor& sums : update_sums) sums.fill_zero();
    const std::int64_t update_tokens = compute_gradients(update, loss_scale, update_sums);
    if (!frozen_.empty()) zero_frozen_gradients();
    if (!options_.inject_overflow_at.empty()) inject_overflow_for_tests();
    double grad_factor = 1.0;
    if (defer_grad_norm_) {
      settle_grad_norm();  // the previous update's (computed long before): stops here if it was not finite
    } else {
      // Every worker holds the same summed gradients, so every worker decides alike. Non-finite
      // logits make the gradients non-finite too: the norm alone decides, and the loss is read back
      // only to say what happened.
      const ops::NormFactor nf =
          ops::norm_factor(ops::sum_squares(model_->parameters().grads()), t.clip_norm, loss_scale);
      grad_norm = nf.norm;
      if (!std::isfinite(grad_norm)) {
        comm_->all_reduce_sum(update_sums);
        const double loss = update_sums[0].to_vector<double>()[0] / static_cast<double>(update_tokens);
        if (!fp16) fail_non_finite(state_.step + 1, grad_norm, loss);
        skip_overflowed_update(loss, grad_norm);
        continue;
      }
      grad_factor = nf.factor;  // unscaling (fp16) and clipping in one pass over the gradients, then Adam
    }
    ops::AdamHyper hyper;
    hyper.step = state_.step + 1;
    hyper.lr = learning_rate_at(hyper.step);
    hyper.beta1 = t.adam_beta1;
    hyper.beta2 = t.adam_beta2;
    hyper.eps = t.adam_eps;
    hyper.weight_decay = t.weight_decay;
    const bool muon = t.optimizer == "muon";
    ops::MuonHyper muon_hyper;
    muon_hyper.lr = hyper.lr * t.muon_lr_scale;
    muon_hyper.momentum = t.muon_momentum;
    muon_hyper.ns_steps = t.muon_ns_steps;
    muon_hyper.weight_decay = t.weight_decay;
    for_each_worker([&](std::size_t w) {
      model::ParameterSet& params = worker_model(w).parameters();
      if (defer_grad_norm_) {
        // The norm and factor stay on the device; Adam applies the factor (a non-finite one: no
        // update); worker 0's are copied back behind the update, for settle_grad_norm().
        const Tensor nf = ops::grad_norm_factor(params.grads(), t.clip_norm, 1.0);
        if (w == 0) {
          pending_norm_ = nf;
          if constexpr (kWithCuda) {
            if (!nf.device().is_cpu()) {
              if (!norm_readback_) norm_readback_ = std::make_shared<cuda::Readback>();
              norm_readback_->start(nf.data<double>(), 2 * sizeof(double), nf.device().index);
            }
          }
        }
        optimizer_step(params, worker_adam_m(w), worker_adam_v(w), hyper, nullptr, &nf);
      } else {
        if (grad_factor != 1.0) ops::scale_(params.grads(), grad_factor);
        optimizer_step(params, worker_adam_m(w), worker_adam_v(w), hyper, muon ? &muon_hyper : nullptr);
      }
      ops::add_(window_sums[w], update_sums[w]);
    });
    if (defer_grad_norm_) pending_update_ = state_.step + 1;
    if (state_.ema.defined()) update_ema();
    if (fp16) grow_loss_scale();
    ++state_.step;
    ++updates_here_;
    state_.tokens_seen += update_tokens;
    window_tokens += update_tokens;
    ++window_updates;
    state_.elapsed_seconds = start_elapsed + seconds_since(start);

    if (state_.step % t.log_every == 0) {
      comm_->all_reduce_sum(window_sums);
      const std::vector<double> sums = window_sums[0].to_vector<double>();  // the window's one read
      for (Tensor& s : window_sums) s.fill_zero();
      const double loss = sums[0] / static_cast<double>(window_tokens);
      result.last_train_loss = loss;
      if (defer_grad_norm_) grad_norm = settle_grad_norm();  // this update's, for the log
      if (writer_)
        log_window(loss, sums[1] / static_cast<double>(window_tokens), hyper.lr, grad_norm,
                   static_cast<double>(window_tokens) / seconds_since(window_start), seconds_per_step(),
                   static_cast<double>(window_tokens) / static_cast<double>(window_updates));
      window_tokens = 0;
      window_updates = 0;
      window_start = Clock::now();
    }
    show_progress(seconds_per_step());
    const Clock::time_point paused = Clock::now();  // (the budget's pace leaves these out)
    if (writer_ && has_valid_ && t.valid_every > 0 && state_.step % t.valid_every == 0) {
      validate(result);
      if (t.patience > 0 && state_.bad_validations >= t.patience) {
        spdlog::info("train: no improvement in {} validations: stopping early", state_.bad_validations);
        result.early_stopped = true;
      }
    }
    if (writer_ && checkpoint_due()) save_checkpoint(CheckpointKind::kRegular);
    pause_seconds_ += seconds_since(paused);
    calibrate_budget(result);  // (a budget with a decaying schedule: fixes the count)
  }
  show_progress(seconds_per_step(), true);  // where the loop ended
  settle_grad_norm();  // (every process: the last update's norm)
  // The state at the end: a regular checkpoint when the run ended, an interrupted one when a
  // signal stopped it; never a checkpoint of an untrained model.
  if (writer_ && state_.step > 0 && state_.step != saved_step_) {
    save_checkpoint(result.interrupted ? CheckpointKind::kInterrupted : CheckpointKind::kRegular);
  }
  if (processes_.size > 1) wait_for_writer();  // no process ends (and ends the launch) before that is saved
  result.step = state_.step;
  result.last_checkpoint = last_saved_;
  result.resumed_from = resumed_from_;
  return result;
}

}  // namespace dragoman::train::detail

namespace dragoman::train {

TrainResult train(const TrainConfig& config, const TrainOptions& options) {
  config.validate();
  config.check_files();
  if (options.run_dir.empty()) throw Error("train: no run directory");
  detail::Trainer trainer(config, options);
  try {
    return trainer.run();
  } catch (const std::exception& e) {
    trainer.end_other_processes(e.what());  // returns only when there are none
    throw;
  }
}

}  // namespace dragoman::train
