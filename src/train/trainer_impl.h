// The Trainer behind train() (trainer.h), internal to src/train: one class whose parts live in
//   trainer.cpp           the loop, top to bottom (run) and train()
//   trainer_setup.cpp     checks, run directory, vocabulary, resume, corpora
//   trainer_workers.cpp   data-parallel workers, an update's batches and gradients, agreeing on stop
//   trainer_outputs.cpp   metrics, log lines, checkpoints, validation
//   trainer_failures.cpp  non-finite values, out of memory, fp16 overflows and the loss scale
//   trainer_budget.cpp    the time budget: its clock, the calibration, the schedule, checkpoints due
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/timing.h"
#include "core/allocator.h"
#include "data/corpus.h"
#include "device/cuda/readback.h"
#include "model/checkpoint.h"
#include "model/transformer.h"
#include "text/vocabulary.h"
#include "train/communicator.h"
#include "train/run_dir.h"
#include "train/train_state.h"
#include "train/trainer.h"

namespace dragoman::train::detail {

namespace fs = std::filesystem;

// The files a run writes into its directory (all removed by --overwrite; train.lock stays).
inline const char* const kRunFiles[] = {
    "checkpoints",           "metrics.jsonl",      "train.cache",      "valid.cache", "vocab.model",
    "vocab.vocab",           "vocab.json",         "config.yaml",      "train.log",   "vocab-build.tmp",
    "valid-translation.txt", "valid-translations", "train.inputs.json"};

class Trainer {
 public:
  Trainer(const TrainConfig& config, const TrainOptions& options) : config_(config), options_(options) {}
  TrainResult run();
  // After an error in this process of a multi-process run: ends the others (they would wait for
  // this one forever). Returns when there are no others.
  void end_other_processes(const std::string& error) noexcept {
    if (comm_ && comm_->processes() > 1) {
      comm_->abort("train: process " + std::to_string(comm_->process_rank()) + " of " +
                   std::to_string(comm_->processes()) + ": " + error);
    }
  }

 private:
  bool stop_requested() const { return options_.stop_signal != nullptr && options_.stop_signal->load() != 0; }
  void check_inputs();
  // training.init_from: the model file's architecture into config_.model, its vocabulary, what its
  // files carry besides (file_info_), and its weights for a fresh start (init_model_).
  void load_init_model();
  // training.freeze: the frozen parameters' names; their gradients are zeroed before every update.
  void find_frozen_parameters();
  void zero_frozen_gradients();
  // The tokens of the corpora the vocabulary does not know (<unk>), logged when there are any.
  void report_unknown_tokens() const;
  void prepare_run_dir();
  void obtain_vocabulary();
  void build_vocabulary(const fs::path& prefix);
  void resume_or_initialize();
  std::string finished_reason() const;
  void load_corpora();
  void save_checkpoint(CheckpointKind kind);
  // The moving average of the weights (training.ema_decay): started (from the weights) or taken
  // from the checkpoint, updated after each update, and swapped into the model (validation, its
  // model file) and back.
  void start_ema();
  void update_ema();
  void swap_ema();
  void validate(TrainResult& result);
  void validate_model(TrainResult& result);  // validate()'s work, on the weights in model_
  double translate_valid();
  void append_metrics(const nlohmann::json& line);
  std::string last_good_state() const;
  [[noreturn]] void fail_non_finite(std::int64_t update, double grad_norm, std::optional<double> loss) const;
  double settle_grad_norm();
  void require_finite_weights() const;
  void inject_overflow_for_tests();
  void skip_overflowed_update(double loss, double grad_norm);
  void grow_loss_scale();
  model::Batch on_device(model::Batch batch, Device device) const;
  model::Transformer& worker_model(std::size_t w);
  Tensor& worker_adam_m(std::size_t w);
  Tensor& worker_adam_v(std::size_t w);
  void for_each_worker(const std::function<void(std::size_t)>& fn);
  void start_workers();
  void wait_for_writer();
  void settle_batches_per_update();
  std::vector<std::vector<std::int64_t>> epoch_plan(std::int64_t epoch) const;
  std::vector<std::vector<std::int64_t>> next_update(std::vector<std::vector<std::int64_t>>& plan);
  std::int64_t compute_gradients(const std::vector<std::vector<std::int64_t>>& update, double loss_scale,
                                 const std::vector<Tensor>& sums);
  void agree_on_stop(TrainResult& result);
  // The time budget (trainer_budget.cpp, budget.h).
  void start_budget();
  double budget_clock() const;
  bool budget_spent() const;
  void calibrate_budget(TrainResult& result);
  void refine_budget();
  double learning_rate_at(std::int64_t step) const;
  bool checkpoint_due() const;
  std::int64_t planned_steps() const;
  void log_window(double loss, double nll, double lr, double grad_norm, double tokens_per_second,
                  double seconds_per_step, double tokens_per_update);
  // The seconds left (-1: unknown): of the updates planned at this pace, or of the time budget.
  double eta_seconds(double seconds_per_step) const;
  // The status line on a terminal (TrainOptions::progress_bar), at most 5 times a second.
  void show_progress(double seconds_per_step, bool now = false);
  [[noreturn]] void fail_out_of_memory(const OutOfMemory& e, const std::string& during) const;

  TrainConfig config_;
  TrainOptions options_;
  model::ParameterPrecision precision_;  // fp32 master weights, training.precision compute
  // Data parallelism (communicator.h): this process's workers, one device each (training.devices),
  // among processes_; worker 0 is model_ with state_'s Adam moments, the others are replicas_.
  // Only the writer (process 0) writes into the run directory and logs.
  std::vector<Device> devices_;
  Device device_;  // devices_[0]
  ProcessGroup processes_;
  bool writer_ = true;
  std::unique_ptr<Communicator> comm_;
  struct Replica {
    std::unique_ptr<model::Transformer> model;
    Tensor adam_m, adam_v;
  };
  std::vector<Replica> replicas_;  // workers 1 .. local_size() - 1
  int worker_threads_ = 1;         // compute threads of each CPU worker
  // The gradient norm read one update late (bf16/fp32 Adam on a GPU; TrainOptions::defer_grad_norm):
  // each update's {norm, factor} stays on its worker's device (ops::grad_norm_factor), where Adam
  // applies the factor, so no update waits for the host; worker 0's is copied back behind it
  // (norm_readback_) and checked by settle_grad_norm() after the next update's gradients, and
  // before anything is logged, validated or saved.
  bool defer_grad_norm_ = false;
  std::int64_t pending_update_ = 0;  // the update whose norm is not checked yet (0: none)
  Tensor pending_norm_;              // its {norm, factor} on worker 0's device
  double settled_norm_ = 0;          // the last norm checked
  std::shared_ptr<cuda::Readback> norm_readback_;  // made at the first deferred norm on a GPU
  std::set<std::int64_t> injected_overflows_;
  std::string run_;
  std::unique_ptr<text::Vocabulary> vocab_;
  // What every model file of the run carries besides the weights: the vocabulary (ours, or an
  // imported model's two sides), and from a model started from, its decoding settings.
  model::ModelFileInfo file_info_;
  std::unique_ptr<model::Transformer> init_model_;  // training.init_from's weights, until a fresh start
  std::vector<std::string> frozen_;                 // training.freeze's parameters
  std::unique_ptr<model::Transformer> model_;
  TrainState state_;
  std::uint64_t train_data_hash_ = 0, valid_data_hash_ = 0;  // of the data files, from check_inputs
  std::string train_data_stamp_;  // their sizes and times (data::input_stamp): train.inputs.json
  data::EncodedCorpus train_, valid_;
  std::vector<std::string> valid_references_;  // the target text of each kept dev pair (valid_bleu)
  bool has_valid_ = false;
  bool has_checkpoints_ = false;  // the run directory held a checkpoint when this start began
  std::int64_t saved_step_ = -1;
  std::int64_t resumed_from_ = -1;
  std::string last_saved_;  // the model file saved last ("" until one is)
  Clock::time_point last_save_ = Clock::now();
  // The loop's start in this process, and the training time before it (TrainState::elapsed_seconds).
  Clock::time_point loop_start_ = Clock::now();
  double start_elapsed_ = 0;
  bool loop_started_ = false;
  // The time budget: in seconds (0: none); whether it fixes the number of updates (a decaying
  // schedule, or a count fixed before); the calibration window's start (step -1: not open), and the
  // updates this process has made.
  double budget_seconds_ = 0;
  bool budget_fixes_count_ = false;
  std::int64_t calibration_step_ = -1;
  double calibration_clock_ = 0;
  std::int64_t calibration_tokens_ = 0;
  std::int64_t updates_here_ = 0;
  // For fixing the count again (refine_budget): the seconds this process spent in the loop's
  // validations and checkpoints; whether the first fix was made in this process, and the time of one
  // validation and one checkpoint it measured; the window's first update (-1: not open), and the
  // clock and those seconds then.
  double pause_seconds_ = 0;
  bool fixed_here_ = false;
  double fix_validation_seconds_ = 0, fix_checkpoint_seconds_ = 0;
  std::int64_t refine_step_ = -1;
  double refine_clock_ = 0, refine_pauses_ = 0;
  // The status line: when it was drawn (-1: never), the last window's loss and speed (-1: none yet).
  double bar_drawn_ = -1;
  double bar_loss_ = -1, bar_tokens_per_second_ = -1;
};

}  // namespace dragoman::train::detail
