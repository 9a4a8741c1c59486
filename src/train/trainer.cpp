// The training loop (see trainer.h).
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "core/allocator.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/json_diff.h"
#include "core/parallel.h"
#include "core/threads.h"
#include "core/timing.h"
#include "data/batching.h"
#include "data/corpus.h"
#include "decode/translator.h"
#include "eval/bleu.h"
#include "eval/corpus.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "io/text_lines.h"
#include "kernels/cuda/runtime_info.h"
#include "model/checkpoint.h"
#include "model/transformer.h"
#include "ops/adam.h"
#include "ops/elementwise.h"
#include "text/vocabulary.h"
#include "train/child_process.h"
#include "train/communicator.h"
#include "train/schedule.h"
#include "train/train_state.h"
#include "train/update.h"

namespace dragoman {

namespace fs = std::filesystem;

namespace {

// The keys that define a run: once it has a checkpoint, changing any of them needs --overwrite.
// They fix the model, the vocabulary, the data and its order (seed, batch size, accumulation).
// Everything else (run length, learning rate and optimizer settings, clipping, logging, validation,
// checkpoint intervals) may change between restarts; the changes are logged.
nlohmann::json run_identity(const nlohmann::json& config) {
  nlohmann::json id = {{"model", config["model"]}, {"data", config["data"]}};
  // update_freq is not among them: what defines the run is workers x update_freq, which the
  // training state keeps (Trainer::check_batches_per_update).
  for (const char* key : {"seed", "max_tokens"}) id["training"][key] = config["training"][key];
  return id;
}

// "section.key: before -> now" for every key that differs (the keys of both are the same).
std::vector<std::string> changed_keys(const nlohmann::json& before, const nlohmann::json& now) {
  std::vector<std::string> changes;
  for (const auto& [section, values] : now.items()) {
    if (!values.is_object() || !before.contains(section)) continue;
    for (const auto& [key, value] : values.items()) {
      if (before[section].contains(key) && before[section][key] != value) {
        changes.push_back(section + "." + key + ": " + before[section][key].dump() + " -> " + value.dump());
      }
    }
  }
  return changes;
}

// The files a run writes into its directory (all removed by --overwrite; train.lock stays).
const char* const kRunFiles[] = {
    "checkpoints", "metrics.jsonl", "train.cache", "valid.cache",     "vocab.model",           "vocab.vocab",
    "vocab.json",  "config.yaml",   "train.log",   "vocab-build.tmp", "valid-translation.txt", "valid-translations"};

// What a vocabulary built in the run directory was built from: the training files' content hash
// and the settings. A vocab.model whose record differs is stale.
nlohmann::json vocabulary_record(const TrainConfig& config, std::uint64_t data_hash) {
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(data_hash));
  const DataConfig& d = config.data;
  return {{"data_hash", hash},
          {"train_source", d.train_source},
          {"train_target", d.train_target},
          {"train_tsv", d.train_tsv},
          {"vocab_type", d.vocab_type},
          {"vocab_size", d.vocab_size},
          {"character_coverage", d.character_coverage},
          {"vocab_sample", d.vocab_sample},
          {"seed", config.training.seed}};
}

nlohmann::json read_json_or_null(const fs::path& path) {
  try {
    const std::vector<char> bytes = read_file(path.string());
    return nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const std::exception&) {
    return nullptr;
  }
}

data::CorpusOptions corpus_options(const std::string& source, const std::string& target, const std::string& tsv,
                                   const TrainConfig& config, bool filter) {
  data::CorpusOptions o;
  o.source = source;
  o.target = target;
  o.tsv = tsv;
  o.max_length = filter ? config.data.max_length : std::min<std::int64_t>(config.model.max_positions - 1, 1 << 20);
  o.max_ratio = filter ? config.data.max_ratio : 0.0;
  return o;
}

data::EncodedCorpus load_corpus(const data::CorpusOptions& o, const Vocabulary& vocab, const std::string& cache,
                                const char* what, const std::atomic<int>* stop, std::uint64_t checked_hash) {
  data::EncodedCorpus corpus = data::load_parallel_corpus(o, vocab, cache, compute_threads(), stop, checked_hash);
  const data::FilterCounts& n = corpus.counts;
  spdlog::info(
      "train: {} pairs: {} read, {} kept; dropped {} empty, {} longer than {} tokens, {} with length ratio "
      "over {}",
      what, n.total, n.kept, n.empty, n.too_long, o.max_length, n.bad_ratio, o.max_ratio);
  if (corpus.size() == 0) throw Error(std::string("train: no ") + what + " pairs left after filtering");
  return corpus;
}

// The reference text of each kept dev pair: the target file's lines, or the TSV's second column
// (the corpus reader has checked both).
std::vector<std::string> read_references(const DataConfig& data, const data::EncodedCorpus& valid) {
  const bool tsv = !data.valid_tsv.empty();
  const TextLines lines = read_text_lines(tsv ? data.valid_tsv : data.valid_target);
  std::vector<std::string> references;
  for (const std::int64_t line : valid.line_numbers) {
    std::string_view text = lines.lines.at(static_cast<std::size_t>(line - 1));
    if (tsv) text.remove_prefix(text.find('\t') + 1);
    references.emplace_back(text);
  }
  return references;
}

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
  void prepare_run_dir();
  void obtain_vocabulary();
  void build_vocabulary(const fs::path& prefix);
  void resume_or_initialize();
  std::string finished_reason() const;
  void load_corpora();
  void save_checkpoint(CheckpointKind kind);
  void validate(TrainResult& result);
  double translate_valid();
  void append_metrics(const nlohmann::json& line);
  std::string last_good_state() const;
  [[noreturn]] void fail_non_finite(double loss, double grad_norm) const;
  void require_finite_weights() const;
  void inject_overflow_for_tests();
  void skip_overflowed_update(double loss, double grad_norm);
  void grow_loss_scale();
  Batch on_device(Batch batch, Device device) const;
  Transformer& worker_model(std::size_t w);
  Tensor& worker_adam_m(std::size_t w);
  Tensor& worker_adam_v(std::size_t w);
  void for_each_worker(const std::function<void(std::size_t)>& fn);
  void start_workers();
  void wait_for_writer();
  void check_batches_per_update();
  std::vector<std::vector<std::int64_t>> next_update(std::vector<std::vector<std::int64_t>>& plan);
  std::int64_t compute_gradients(const std::vector<std::vector<std::int64_t>>& update, double loss_scale,
                                 const std::vector<Tensor>& sums);
  void agree_on_stop(TrainResult& result);
  void log_window(double loss, double nll, double lr, double grad_norm, double tokens_per_second,
                  double seconds_per_step);
  [[noreturn]] void fail_out_of_memory(const OutOfMemory& e, const std::string& during) const;

  TrainConfig config_;
  TrainOptions options_;
  ParameterPrecision precision_;  // fp32 master weights, training.precision compute
  // Data parallelism (communicator.h): this process's workers, one device each (training.devices),
  // among processes_; worker 0 is model_ with state_'s Adam moments, the others are replicas_.
  // Only the writer (process 0) writes into the run directory and logs.
  std::vector<Device> devices_;
  Device device_;  // devices_[0]
  ProcessGroup processes_;
  bool writer_ = true;
  std::unique_ptr<Communicator> comm_;
  struct Replica {
    std::unique_ptr<Transformer> model;
    Tensor adam_m, adam_v;
  };
  std::vector<Replica> replicas_;  // workers 1 .. local_size() - 1
  int worker_threads_ = 1;         // compute threads of each CPU worker
  std::set<std::int64_t> injected_overflows_;
  std::string run_;
  std::unique_ptr<Vocabulary> vocab_;
  std::unique_ptr<Transformer> model_;
  TrainState state_;
  std::uint64_t train_data_hash_ = 0, valid_data_hash_ = 0;  // of the data files, from check_inputs
  data::EncodedCorpus train_, valid_;
  std::vector<std::string> valid_references_;  // the target text of each kept dev pair (valid_bleu)
  bool has_valid_ = false;
  bool has_checkpoints_ = false;  // the run directory held a checkpoint when this start began
  std::int64_t saved_step_ = -1;
  std::int64_t resumed_from_ = -1;
  std::string last_saved_;  // the model file saved last ("" until one is)
  Clock::time_point last_save_ = Clock::now();
};

// Everything that can be wrong with the command is found here, before the run directory is touched:
// the config, the model config (with the vocabulary's size), the vocabulary file and the data files.
void Trainer::check_inputs() {
  const int visible = cuda::device_count();
  devices_ = parse_devices(config_.training.devices, visible);
  device_ = devices_.front();
  for (const Device& d : devices_) {
    if (d.is_cpu()) continue;
    if (!built_with_cuda()) {
      throw Error(
          "training.devices " + d.str() +
          ": this build of dragoman has no CUDA (build it on a machine with the CUDA toolkit), or train on cpu");
    }
    if (d.index >= visible) {
      throw Error("training.devices " + d.str() + ": no such CUDA device (" + std::to_string(visible) + " visible" +
                  (visible == 0 ? ": no driver or no GPU" : "") + ")");
    }
  }
  processes_ = ProcessGroup::from_environment();
  writer_ = processes_.rank == 0;
  ModelConfig& mc = config_.model;
  if (!config_.data.vocabulary.empty())
    vocab_ = std::make_unique<Vocabulary>(Vocabulary::load(config_.data.vocabulary));
  mc.src_vocab_size = mc.tgt_vocab_size = vocab_ ? vocab_->size() : config_.data.vocab_size;
  mc.pad_id = kPadId;
  mc.bos_id = kBosId;
  mc.eos_id = kEosId;
  mc.validate();
  if (config_.data.max_length + 1 > mc.max_positions) {
    throw Error("data.max_length " + std::to_string(config_.data.max_length) + " + 1 exceeds model.max_positions " +
                std::to_string(mc.max_positions));
  }
  const DataConfig& d = config_.data;
  train_data_hash_ =
      data::check_parallel_corpus(corpus_options(d.train_source, d.train_target, d.train_tsv, config_, true));
  has_valid_ = !d.valid_source.empty() || !d.valid_tsv.empty();
  if (has_valid_) {
    valid_data_hash_ =
        data::check_parallel_corpus(corpus_options(d.valid_source, d.valid_target, d.valid_tsv, config_, false));
  }
}

// A directory that already holds a run (a checkpoint) must have been started with the same
// run-defining keys (--overwrite has cleared it before). Then writes config.yaml.
void Trainer::prepare_run_dir() {
  const fs::path run(run_);
  const fs::path saved = run / "config.yaml";
  has_checkpoints_ = !resumable_checkpoints(run_).empty();
  if (has_checkpoints_ && fs::exists(saved)) {
    TrainConfig before_config = TrainConfig::load(saved.string(), {});
    before_config.make_paths_absolute();  // configs of older versions hold paths as given
    const nlohmann::json before = before_config.to_json(), now = config_.to_json();
    const std::string difference = first_json_difference(run_identity(before), run_identity(now));
    if (!difference.empty()) {
      throw Error("run directory " + run_ + " holds a run with another config (" + difference +
                  "); use another --run, or --overwrite to start afresh");
    }
    for (const std::string& change : changed_keys(before, now))
      spdlog::info("train: changed since the last start: {}", change);
  } else if (fs::exists(saved)) {
    spdlog::info("train: {} has no checkpoint yet: starting it with this config", run_);
  }
  fs::create_directories(run / "checkpoints");
  write_file_atomically(saved.string(), to_yaml(config_.to_json()));
}

// The vocabulary given in the config, RUN/vocab.model when it was built from the same data and
// settings, or a new one built there. A run with checkpoints keeps the vocabulary they use.
void Trainer::obtain_vocabulary() {
  if (vocab_) return;  // data.vocabulary, loaded by check_inputs
  const fs::path prefix = fs::path(run_) / "vocab";
  const fs::path built = fs::path(run_) / "vocab.model", record_path = fs::path(run_) / "vocab.json";
  if (!writer_) {  // process 0 has built or checked it
    vocab_ = std::make_unique<Vocabulary>(Vocabulary::load(built.string()));
    return;
  }
  const nlohmann::json record = vocabulary_record(config_, train_data_hash_);
  if (fs::exists(built)) {
    const nlohmann::json previous = read_json_or_null(record_path);
    if (previous == record) {
      vocab_ = std::make_unique<Vocabulary>(Vocabulary::load(built.string()));
      return;
    }
    if (has_checkpoints_) {
      if (!previous.is_null()) {
        spdlog::warn(
            "train: the training data changed since {} was built from it; the run's checkpoints use that "
            "vocabulary, so it stays (--overwrite starts a run with a new one)",
            built.string());
      }
      vocab_ = std::make_unique<Vocabulary>(Vocabulary::load(built.string()));
      write_file_atomically(record_path.string(), record.dump(2) + "\n");
      return;
    }
    spdlog::info("train: {} was built from other data or settings (or its record is missing): building it again",
                 built.string());
  }
  build_vocabulary(prefix);
  write_file_atomically(record_path.string(), record.dump(2) + "\n");
  vocab_ = std::make_unique<Vocabulary>(Vocabulary::load(built.string()));
}

// Trains the SentencePiece vocabulary in a child process, so a signal stops it at once.
void Trainer::build_vocabulary(const fs::path& prefix) {
  VocabularyOptions v;
  v.model_type = config_.data.vocab_type;
  v.vocab_size = config_.data.vocab_size;
  v.character_coverage = config_.data.character_coverage;
  v.input_sentence_size = config_.data.vocab_sample;
  v.seed = static_cast<std::uint32_t>(config_.training.seed);
  v.threads = compute_threads();
  // Everything the child writes goes to a scratch directory that is removed however the build ends
  // (a killed child leaves its temporary files there too); the result is moved into place after.
  const fs::path scratch = fs::path(run_) / "vocab-build.tmp";
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  struct RemoveScratch {
    fs::path path;
    ~RemoveScratch() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } remove_scratch{scratch};
  std::vector<std::string> temporary;
  if (!config_.data.train_tsv.empty()) {
    temporary = {(scratch / "input.src").string(), (scratch / "input.tgt").string()};
    v.inputs = temporary;
  } else {
    v.inputs = {config_.data.train_source, config_.data.train_target};
  }
  spdlog::info("train: building a shared {} vocabulary of {} pieces (dragoman build-vocab)", v.model_type,
               v.vocab_size);
  const std::string tsv = config_.data.train_tsv;
  const bool built = run_in_child_process(
      [&] {
        if (!tsv.empty()) data::split_tsv_file(tsv, temporary[0], temporary[1]);
        Vocabulary::train(v).save((scratch / "vocab").string());
      },
      options_.stop_signal);
  if (!built) throw Interrupted("train: interrupted while building the vocabulary");
  fs::rename(scratch / "vocab.vocab", prefix.string() + ".vocab");
  fs::rename(scratch / "vocab.model", prefix.string() + ".model");
}

// Loads the newest checkpoint that loads (a damaged one is set aside, and the next older one is
// tried), or initialises a fresh model.
void Trainer::resume_or_initialize() {
  const ModelConfig& mc = config_.model;
  int set_aside = 0;
  for (const CheckpointRef& checkpoint : resumable_checkpoints(run_)) {
    const std::string model_path = checkpoint_model_path(run_, checkpoint.step, checkpoint.kind);
    const std::string state_path = checkpoint_state_path(run_, checkpoint.step, checkpoint.kind);
    ModelFileInfo info;
    std::unique_ptr<Transformer> loaded;
    TrainState state;
    for (const std::string& path : {model_path, state_path}) {  // unreadable is not damaged: say so, keep it
      if (!std::ifstream(path, std::ios::binary)) throw Error("cannot read checkpoint file " + path);
    }
    try {
      loaded = std::make_unique<Transformer>(load_model(model_path, precision_, &info, device_));
      state = load_train_state(state_path);
      if (state.step != checkpoint.step || state.adam_m.numel() != loaded->parameters().size()) {
        throw Error("checkpoint state " + state_path + " does not match its model file");
      }
    } catch (const Error& e) {  // the contents: truncated, not a model, non-finite values, ...
      if (!writer_) throw;      // process 0 set aside the damaged ones before the others started
      spdlog::warn("train: cannot resume from {} ({}); setting it aside as *.damaged and trying an older checkpoint",
                   model_path, e.what());
      set_aside_damaged_checkpoint(run_, checkpoint);
      ++set_aside;
      continue;
    } catch (const std::logic_error& e) {  // a number in the state file that does not parse
      if (!writer_) throw;
      spdlog::warn("train: cannot resume from {} ({}); setting it aside as *.damaged and trying an older checkpoint",
                   model_path, e.what());
      set_aside_damaged_checkpoint(run_, checkpoint);
      ++set_aside;
      continue;
    }
    if (loaded->config() != mc) throw Error("checkpoint " + model_path + " has another model config");
    if (info.vocabulary != vocab_->bytes()) {
      throw Error(
          "checkpoint " + model_path + " was trained with another vocabulary than " +
          (config_.data.vocabulary.empty() ? (fs::path(run_) / "vocab.model").string() : config_.data.vocabulary));
    }
    model_ = std::move(loaded);
    state_ = std::move(state);
    if (!device_.is_cpu()) {  // a checkpoint holds no device: CPU and GPU runs resume each other
      state_.adam_m = state_.adam_m.to(device_);
      state_.adam_v = state_.adam_v.to(device_);
    }
    saved_step_ = state_.step;
    resumed_from_ = state_.step;
    if (set_aside > 0) {  // checkpoint-last still names the damaged files
      const fs::path dir = fs::path(run_) / "checkpoints";
      link_atomically(model_path, (dir / "checkpoint-last.safetensors").string());
      link_atomically(state_path, (dir / "checkpoint-last.state.safetensors").string());
    }
    if (writer_) truncate_metrics((fs::path(run_) / "metrics.jsonl").string(), state_.step);
    spdlog::info("train: resuming from step {} (epoch {}, batch {}){}", state_.step, state_.epoch + 1,
                 state_.batch_index, checkpoint.kind == CheckpointKind::kInterrupted ? " of an interrupted run" : "");
    return;
  }
  if (set_aside > 0) {  // never start afresh silently over a run's checkpoints
    throw Error("run directory " + run_ + " has no loadable checkpoint (" + std::to_string(set_aside) +
                " set aside as *.damaged in " + (fs::path(run_) / "checkpoints").string() +
                "); restore one, or use --overwrite to start afresh");
  }
  model_ = std::make_unique<Transformer>(mc, precision_, device_);
  model_->initialize(config_.training.seed);  // the same weights on every device (Philox, per element)
  state_ = TrainState();
  state_.adam_m = Tensor::zeros({model_->parameters().size()}, DType::kF32, device_);
  state_.adam_v = Tensor::zeros({model_->parameters().size()}, DType::kF32, device_);
  if (writer_) truncate_metrics((fs::path(run_) / "metrics.jsonl").string(), 0);
}

// Why the resumed run has nothing left to do ("": it has).
std::string Trainer::finished_reason() const {
  const TrainingConfig& t = config_.training;
  if (t.max_steps > 0 && state_.step >= t.max_steps) return "training.max_steps " + std::to_string(t.max_steps);
  if (t.max_epochs > 0 && state_.epoch >= t.max_epochs) return "training.max_epochs " + std::to_string(t.max_epochs);
  if (has_valid_ && t.patience > 0 && state_.bad_validations >= t.patience) {
    return "early stopping: no improvement in " + std::to_string(state_.bad_validations) +
           " validations, training.patience " + std::to_string(t.patience);
  }
  return "";
}

void Trainer::load_corpora() {
  const DataConfig& d = config_.data;
  train_ = load_corpus(corpus_options(d.train_source, d.train_target, d.train_tsv, config_, true), *vocab_,
                       (fs::path(run_) / "train.cache").string(), "training", options_.stop_signal, train_data_hash_);
  if (has_valid_) {
    valid_ =
        load_corpus(corpus_options(d.valid_source, d.valid_target, d.valid_tsv, config_, false), *vocab_,
                    (fs::path(run_) / "valid.cache").string(), "validation", options_.stop_signal, valid_data_hash_);
    if (config_.training.valid_bleu) valid_references_ = read_references(d, valid_);
  } else if (config_.training.valid_bleu) {
    spdlog::warn("train: training.valid_bleu is on but there is no dev set (data.valid_source/valid_tsv)");
  }
}

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
  require_finite_weights();
  const std::string model_path = checkpoint_model_path(run_, state_.step, kind);
  const std::string state_path = checkpoint_state_path(run_, state_.step, kind);
  ModelFileInfo info;
  info.step = state_.step;
  info.vocabulary = vocab_->bytes();
  save_model(model_path, *model_, info);
  save_train_state(state_path, state_);
  const fs::path dir = fs::path(run_) / "checkpoints";
  link_atomically(model_path, (dir / "checkpoint-last.safetensors").string());
  link_atomically(state_path, (dir / "checkpoint-last.state.safetensors").string());
  for (const CheckpointRef& old : resumable_checkpoints(run_)) {
    if (old.kind == CheckpointKind::kInterrupted && !(kind == old.kind && old.step == state_.step)) {
      fs::remove(checkpoint_model_path(run_, old.step, old.kind));
      fs::remove(checkpoint_state_path(run_, old.step, old.kind));
    }
  }
  if (kind == CheckpointKind::kRegular) {
    const std::vector<std::int64_t> steps = checkpoint_steps(run_);
    for (std::size_t i = 0; i + static_cast<std::size_t>(config_.checkpoint.keep_last) < steps.size(); ++i) {
      fs::remove(checkpoint_model_path(run_, steps[i]));
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
  TranslatorOptions o = TranslatorOptions::for_device(device_);
  o.search.beam = static_cast<int>(config_.training.valid_beam);
  o.batch_tokens = device_.is_cpu() ? config_.training.max_tokens
                                    : std::max<std::int64_t>(o.batch_tokens, config_.training.max_tokens);
  const Translator translator(*model_, *vocab_, o);
  std::vector<std::vector<std::int32_t>> sources;
  for (std::int64_t i = 0; i < valid_.size(); ++i) sources.push_back(valid_.src(i));
  const std::vector<Translation> translations = translator.translate_ids(std::move(sources));
  std::string text;
  eval::Corpus corpus;
  corpus.refs.emplace_back(valid_references_.begin(), valid_references_.end());
  for (const Translation& t : translations) {
    text += t.nbest.front().text + "\n";
    corpus.hyps.emplace_back(t.nbest.front().text);  // views into `translations`, alive until the score
  }
  const fs::path kept = fs::path(run_) / "valid-translations";
  fs::create_directories(kept);
  const fs::path step_file = kept / (step_name(state_.step) + ".txt");
  write_file_atomically(step_file.string(), text);
  link_atomically(step_file.string(), (fs::path(run_) / "valid-translation.txt").string());
  keep_newest_files(kept, static_cast<std::size_t>(config_.checkpoint.keep_last));
  return eval::corpus_score(eval::Bleu(eval::BleuOptions{}), corpus, compute_threads()).score;
}

void Trainer::validate(TrainResult& result) {
  const TrainingConfig& t = config_.training;
  // The dev set's loss sums stay on the model's device until the last batch (keeps no activations).
  Tensor sums = Tensor::zeros({2}, DType::kF64, model_->parameters().values().device());
  std::int64_t tokens = 0;
  try {
    for (const auto& pairs : data::make_token_batches(valid_, config_.training.max_tokens, 0, 0)) {
      ForwardOptions options;
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
    ModelFileInfo info;
    info.step = state_.step;
    info.vocabulary = vocab_->bytes();
    save_model((fs::path(run_) / "checkpoints" / "checkpoint-best.safetensors").string(), *model_, info);
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

// What a run that stops on an error leaves to resume from.
std::string Trainer::last_good_state() const {
  return last_saved_.empty() && saved_step_ < 0
             ? std::string("no checkpoint was written yet")
             : "the last checkpoint (step " + std::to_string(saved_step_) +
                   ", checkpoints/checkpoint-last.safetensors) is the last good state";
}

// A non-finite loss or gradient norm never reaches Adam: the run stops, and its newest checkpoint
// (written before this update) is the last good state.
void Trainer::fail_non_finite(double loss, double grad_norm) const {
  throw Error(fmt::format(
      "train: update {} gave a non-finite {} (loss {}, gradient norm {}); stopping without applying it, {}. Lower "
      "the learning rate (training.lr_factor or training.lr), lengthen training.warmup_steps or set "
      "training.clip_norm, then run the same command to resume",
      state_.step + 1, std::isfinite(loss) ? "gradient norm" : "loss", loss, grad_norm, last_good_state()));
}

// A batch that does not fit: the message says which key to lower (the allocator's says how much
// was asked for and how much is in use). Nothing is applied or saved; the last checkpoint stands.
void Trainer::fail_out_of_memory(const OutOfMemory& e, const std::string& during) const {
  const TrainingConfig& t = config_.training;
  throw Error(fmt::format(
      "train: {} ran out of memory on {} with batches of training.max_tokens {} tokens a side ({}). Lower "
      "training.max_tokens, and raise training.update_freq by the same factor to keep the tokens per update (both "
      "define the run: start it in a new --run, or use --overwrite); {}",
      during, device_.str(), t.max_tokens, e.what(), last_good_state()));
}

Batch Trainer::on_device(Batch batch, Device device) const {
  return device.is_cpu() ? batch : batch.to(device, config_.model);
}

// A barrier of the processes: the others wait here until process 0 has prepared the run directory
// (vocabulary, corpus caches, damaged checkpoints set aside), then read what it wrote.
void Trainer::wait_for_writer() { comm_->all_reduce_host({0.0}, ReduceOp::kMax); }

// The run's batches per update are world size x update_freq: a checkpoint made with 8 workers and
// update_freq 1 resumes on 1 worker with update_freq 8 (and back), never with another total.
void Trainer::check_batches_per_update() {
  const std::int64_t now = config_.training.update_freq * comm_->world_size();
  if (state_.batches_per_update > 0 && state_.batches_per_update != now) {
    throw Error(fmt::format(
        "run directory {} trains with {} batches per update (workers x training.update_freq), this command with {} "
        "({} workers x update_freq {}): set training.update_freq to {} / {} workers, or use --overwrite to start "
        "afresh",
        run_, state_.batches_per_update, now, comm_->world_size(), config_.training.update_freq,
        state_.batches_per_update, comm_->world_size()));
  }
  state_.batches_per_update = now;
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

// The workers of this process: worker 0 is model_ (state_'s moments), worker w > 0 replicas_[w - 1].
Transformer& Trainer::worker_model(std::size_t w) { return w == 0 ? *model_ : *replicas_[w - 1].model; }
Tensor& Trainer::worker_adam_m(std::size_t w) { return w == 0 ? state_.adam_m : replicas_[w - 1].adam_m; }
Tensor& Trainer::worker_adam_v(std::size_t w) { return w == 0 ? state_.adam_v : replicas_[w - 1].adam_v; }

// Runs fn(w) for every local worker at once, each in its own thread (worker 0 in this one), with
// the compute threads split between CPU workers. The first exception is rethrown after all ended.
void Trainer::for_each_worker(const std::function<void(std::size_t)>& fn) {
  const std::size_t n = devices_.size();
  parallel_for(n, static_cast<int>(n), [&](std::size_t begin, std::size_t end) {
    if (begin != 0) use_compute_threads_here(worker_threads_);
    for (std::size_t w = begin; w < end; ++w) fn(w);
  });
}

// The communicator and the replicas of worker 0's model and moments on the other local devices.
void Trainer::start_workers() {
  const ParameterSet& params = model_->parameters();
  for (std::size_t w = 1; w < devices_.size(); ++w) {
    Replica r;
    r.model = std::make_unique<Transformer>(config_.model, precision_, devices_[w]);
    r.model->parameters().values().copy_from(params.values());
    r.model->refresh_compute_weights();
    r.adam_m = Tensor::empty({state_.adam_m.numel()}, DType::kF32, devices_[w]);  // own copies: to() of
    r.adam_v = Tensor::empty({state_.adam_v.numel()}, DType::kF32, devices_[w]);  // the same device shares
    r.adam_m.copy_from(state_.adam_m);
    r.adam_v.copy_from(state_.adam_v);
    replicas_.push_back(std::move(r));
  }
  const int world = comm_->world_size();
  if (world > 1) {
    const int cpu_workers = device_.is_cpu() ? static_cast<int>(devices_.size()) : 0;
    spdlog::info("train: {} data-parallel workers ({} process{} x {}: {}){}", world, comm_->processes(),
                 comm_->processes() == 1 ? "" : "es", devices_.size(), config_.training.devices,
                 cpu_workers > 1 ? fmt::format(", {} compute threads each", worker_threads_) : std::string());
  }
}

// The global batches of the next update: world_size() x update_freq of them from the plan, crossing
// into the next epoch (and rebuilding `plan`) when this one ends; fewer at the end of the last epoch.
std::vector<std::vector<std::int64_t>> Trainer::next_update(std::vector<std::vector<std::int64_t>>& plan) {
  const TrainingConfig& t = config_.training;
  const std::int64_t wanted = t.update_freq * comm_->world_size();
  std::vector<std::vector<std::int64_t>> update;
  while (static_cast<std::int64_t>(update.size()) < wanted) {
    if (state_.batch_index >= static_cast<std::int64_t>(plan.size())) {
      ++state_.epoch;
      state_.batch_index = 0;
      if (t.max_epochs > 0 && state_.epoch >= t.max_epochs) break;
      plan = data::make_token_batches(train_, t.max_tokens, t.seed, state_.epoch);
      if (writer_) spdlog::info("train: epoch {}", state_.epoch + 1);
    }
    update.push_back(plan[static_cast<std::size_t>(state_.batch_index++)]);
  }
  return update;
}

// One update's gradients on every local worker, then summed over all workers: worker g (global rank)
// takes the update's batches g*k .. g*k + k - 1 (k = update_freq) with dropout streams
// (step * world + g) * k + j, and normalises by the whole update's target tokens, so the summed
// gradient is the one-worker gradient of all world x k batches. Loss sums go to `sums` (per worker).
std::int64_t Trainer::compute_gradients(const std::vector<std::vector<std::int64_t>>& update, double loss_scale,
                                        const std::vector<Tensor>& sums) {
  const TrainingConfig& t = config_.training;
  std::int64_t tokens = 0;
  for (const auto& pairs : update) {
    for (const std::int64_t pair : pairs) tokens += train_.tgt_length(pair) + 1;  // the target with its EOS
  }
  const auto world = static_cast<std::uint64_t>(comm_->world_size());
  // The gradients are summed range by range while the last backward pass goes on (where the
  // communicator can), or all at once after it.
  std::vector<Tensor> grads;
  for (std::size_t w = 0; w < devices_.size(); ++w) grads.push_back(worker_model(w).parameters().grads());
  const bool overlap = comm_->overlaps_backward();
  if (overlap) comm_->begin_ranges(grads);
  try {
    for_each_worker([&](std::size_t w) {
      const std::int64_t rank = comm_->first_rank() + static_cast<std::int64_t>(w);
      std::vector<Batch> batches;
      for (std::int64_t j = 0; j < t.update_freq; ++j) {
        const std::int64_t index = rank * t.update_freq + j;
        if (index >= static_cast<std::int64_t>(update.size())) break;  // the last update of the last epoch
        batches.push_back(
            on_device(data::make_batch(train_, update[static_cast<std::size_t>(index)], config_.model), devices_[w]));
      }
      const std::uint64_t stream =
          (static_cast<std::uint64_t>(state_.step) * world + static_cast<std::uint64_t>(rank)) *
          static_cast<std::uint64_t>(t.update_freq);
      Tensor worker_sums = sums[w];
      try {
        if (options_.fail_worker_at.first == rank && options_.fail_worker_at.second == state_.step + 1) {
          throw Error("the failure TrainOptions::fail_worker_at asked for (tests)");
        }
        GradientReady ready;
        if (overlap) ready = [&, w](const GradientRange& range) { comm_->range_ready(w, range.first, range.second); };
        accumulate_gradients(worker_model(w), batches, true, t.seed, stream, loss_scale, &worker_sums, tokens, ready);
      } catch (const OutOfMemory& e) {
        fail_out_of_memory(e, "update " + std::to_string(state_.step + 1) + " (worker " + std::to_string(rank) + ")");
      } catch (const Error& e) {
        if (comm_->world_size() == 1) throw;
        throw Error(fmt::format("train: worker {} of {} ({}) failed at update {}: {}", rank, comm_->world_size(),
                                devices_[w].str(), state_.step + 1, e.what()));
      }
    });
  } catch (const std::exception& e) {
    // Sums the other workers started wait for this one's ranges forever: NCCL's abort ends them.
    if (overlap) comm_->abort(e.what());
    throw;
  }
  if (overlap) {
    comm_->finish_ranges();
  } else {
    comm_->all_reduce_sum(grads);
  }
  return tokens;
}

// What only one process can know, made common to all at the start of each update: a signal that
// reached any process (its number), and the writer's early stop. One process: nothing to exchange.
void Trainer::agree_on_stop(TrainResult& result) {
  double signal = stop_requested() ? options_.stop_signal->load() : 0;
  double early = result.early_stopped ? 1 : 0;
  if (comm_->processes() > 1) {
    const std::vector<double> agreed = comm_->all_reduce_host({signal, early}, ReduceOp::kMax);
    signal = agreed[0];
    early = agreed[1];
  }
  result.stop_signal = static_cast<int>(signal);
  result.interrupted = signal > 0;
  result.early_stopped = early > 0;
}

TrainResult Trainer::run() {
  const TrainingConfig& t = config_.training;
  DType compute = DType::kF32;
  parse_precision(t.precision, compute);  // validated by TrainConfig::validate
  precision_ = ParameterPrecision::training(compute);
  const bool fp16 = compute == DType::kF16;
  config_.make_paths_absolute();
  run_ = options_.run_dir;
  check_inputs();
  const int threads = resolve_threads(static_cast<int>(t.threads), "train: training.threads");
  worker_threads_ = device_.is_cpu() ? std::max(1, threads / static_cast<int>(devices_.size())) : threads;
  set_compute_threads(worker_threads_);
  std::optional<RunLock> lock;
  std::optional<RunLogFile> log_file;
  std::optional<QuietLog> quiet;
  comm_ = make_communicator(devices_, processes_);
  if (writer_) {
    fs::create_directories(run_);
    lock.emplace(run_);
    if (options_.overwrite) {
      for (const char* name : kRunFiles) fs::remove_all(fs::path(run_) / name);
    }
    log_file.emplace((fs::path(run_) / "train.log").string());  // from here on, everything logged is kept
    if (options_.overwrite) spdlog::warn("train: --overwrite: removed the previous run in {}", run_);
    prepare_run_dir();
    spdlog::info("train: config ({}/config.yaml):\n{}", run_, to_yaml(config_.to_json()));
  } else {
    quiet.emplace();  // process 0 logs for the run
  }

  TrainResult result;
  try {
    if (processes_.size > 1 && !writer_) wait_for_writer();
    obtain_vocabulary();
    resume_or_initialize();
    const std::string reason = finished_reason();
    if (reason.empty()) load_corpora();
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
  check_batches_per_update();
  const ModelConfig& mc = config_.model;
  spdlog::info("train: {} parameters on {} in {}, {} training pairs, batches of at most {} tokens x {} per update",
               model_->parameters().size(), config_.training.devices, t.precision, train_.size(), t.max_tokens,
               t.update_freq * comm_->world_size());

  std::vector<std::vector<std::int64_t>> plan = data::make_token_batches(train_, t.max_tokens, t.seed, state_.epoch);
  const Clock::time_point start = Clock::now();
  const std::int64_t start_step = state_.step;
  const double start_elapsed = state_.elapsed_seconds;
  Clock::time_point window_start = Clock::now();
  // The log window's loss and nll sums stay where each worker is and are summed and read once per
  // log line.
  std::vector<Tensor> window_sums, update_sums;
  for (const Device& d : devices_) {
    window_sums.push_back(Tensor::zeros({2}, DType::kF64, d));
    update_sums.push_back(Tensor::zeros({2}, DType::kF64, d));
  }
  std::int64_t window_tokens = 0;
  double grad_norm = 0;

  while (true) {
    if (t.max_steps > 0 && state_.step >= t.max_steps) break;
    if (t.max_epochs > 0 && state_.epoch >= t.max_epochs) break;
    agree_on_stop(result);
    if (result.interrupted || result.early_stopped) break;
    const std::vector<std::vector<std::int64_t>> update = next_update(plan);
    if (update.empty()) break;

    if (fp16 && state_.loss_scale == 0) state_.loss_scale = t.loss_scale;
    const double loss_scale = fp16 ? state_.loss_scale : 1.0;
    for (Tensor& sums : update_sums) sums.fill_zero();
    const std::int64_t update_tokens = compute_gradients(update, loss_scale, update_sums);
    if (!options_.inject_overflow_at.empty()) inject_overflow_for_tests();
    // Every worker holds the same summed gradients, so every worker decides alike. Non-finite
    // logits make the gradients non-finite too: the norm alone decides, and the loss is read back
    // only to say what happened.
    grad_norm = std::sqrt(ops::sum_squares(model_->parameters().grads())) / loss_scale;
    if (!std::isfinite(grad_norm)) {
      comm_->all_reduce_sum(update_sums);
      const double loss = update_sums[0].to_vector<double>()[0] / static_cast<double>(update_tokens);
      if (!fp16) fail_non_finite(loss, grad_norm);
      skip_overflowed_update(loss, grad_norm);
      continue;
    }
    // Unscaling (fp16) and clipping in one pass over the gradients, then Adam, on every worker.
    double grad_factor = 1.0 / loss_scale;
    if (t.clip_norm > 0 && grad_norm > t.clip_norm) grad_factor *= t.clip_norm / grad_norm;
    cpu::AdamHyper hyper;
    hyper.step = state_.step + 1;
    hyper.lr = learning_rate(hyper.step, mc.d_model, t.warmup_steps, t.lr, t.lr_factor, t.lr_decay, t.max_steps);
    hyper.beta1 = t.adam_beta1;
    hyper.beta2 = t.adam_beta2;
    hyper.eps = t.adam_eps;
    hyper.weight_decay = t.weight_decay;
    for_each_worker([&](std::size_t w) {
      ParameterSet& params = worker_model(w).parameters();
      if (grad_factor != 1.0) ops::scale_(params.grads(), grad_factor);
      ops::adam_step(params.values(), params.grads(), worker_adam_m(w), worker_adam_v(w), hyper, params.mirror());
      ops::add_(window_sums[w], update_sums[w]);
    });
    if (fp16) grow_loss_scale();
    ++state_.step;
    state_.tokens_seen += update_tokens;
    window_tokens += update_tokens;
    state_.elapsed_seconds = start_elapsed + seconds_since(start);

    if (state_.step % t.log_every == 0) {
      comm_->all_reduce_sum(window_sums);
      const std::vector<double> sums = window_sums[0].to_vector<double>();  // the window's one read
      for (Tensor& s : window_sums) s.fill_zero();
      const double loss = sums[0] / static_cast<double>(window_tokens);
      result.last_train_loss = loss;
      if (writer_)
        log_window(loss, sums[1] / static_cast<double>(window_tokens), hyper.lr, grad_norm,
                   static_cast<double>(window_tokens) / seconds_since(window_start),
                   seconds_since(start) / static_cast<double>(state_.step - start_step));
      window_tokens = 0;
      window_start = Clock::now();
    }
    if (writer_ && has_valid_ && t.valid_every > 0 && state_.step % t.valid_every == 0) {
      validate(result);
      if (t.patience > 0 && state_.bad_validations >= t.patience) {
        spdlog::info("train: no improvement in {} validations: stopping early", state_.bad_validations);
        result.early_stopped = true;
      }
    }
    const CheckpointConfig& c = config_.checkpoint;
    if (writer_ && ((c.every_steps > 0 && state_.step % c.every_steps == 0) ||
                    (c.every_minutes > 0 && seconds_since(last_save_) >= c.every_minutes * 60))) {
      save_checkpoint(CheckpointKind::kRegular);
    }
  }
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

// The log line and metrics record of a log window (the writer's).
void Trainer::log_window(double loss, double nll, double lr, double grad_norm, double tokens_per_second,
                         double seconds_per_step) {
  const TrainingConfig& t = config_.training;
  const double ppl = std::exp(nll);
  const std::string eta = t.max_steps > 0
                              ? format_hms(seconds_per_step * static_cast<double>(t.max_steps - state_.step))
                              : std::string("-");
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
                            {"elapsed_s", state_.elapsed_seconds}};
  if (!device_.is_cpu()) metrics["device_memory_mib"] = peak_mib;
  if (config_.training.precision == "fp16") {
    metrics["loss_scale"] = state_.loss_scale;
    metrics["skipped_updates"] = state_.skipped_steps;
  }
  append_metrics(metrics);
}

}  // namespace

TrainResult train(const TrainConfig& config, const TrainOptions& options) {
  config.validate();
  if (options.run_dir.empty()) throw Error("train: no run directory");
  Trainer trainer(config, options);
  try {
    return trainer.run();
  } catch (const std::exception& e) {
    trainer.end_other_processes(e.what());  // returns only when there are none
    throw;
  }
}

}  // namespace dragoman
