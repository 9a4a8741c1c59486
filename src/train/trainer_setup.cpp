// The start of a run (see trainer_impl.h): the checks before anything is written, the run directory,
// the vocabulary, resuming from the newest loadable checkpoint, the corpora.
#include "train/trainer_impl.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "base/error.h"
#include "base/json_diff.h"
#include "decode/model_files.h"
#include "device/cpu/threads.h"
#include "device/device.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "io/text_lines.h"
#include "model/checkpoint.h"
#include "ops/build_info.h"
#include "text/vocabulary.h"
#include "train/child_process.h"
#include "train/fine_tuning.h"

namespace dragoman::train::detail {

namespace {

// The keys that define a run: once it has a checkpoint, changing any of them needs --overwrite.
// They fix the model, the vocabulary, the data and its order (seed, batch size, accumulation).
// Everything else (run length, learning rate and optimizer settings, clipping, logging, validation,
// checkpoint intervals) may change between restarts; the changes are logged.
nlohmann::json run_identity(const nlohmann::json& config) {
  nlohmann::json id = {{"model", config["model"]}, {"data", config["data"]}};
  // update_freq and tokens_per_update are not among them: what defines the run is its batches per
  // update (workers x update_freq, derived or given), which the training state keeps
  // (Trainer::settle_batches_per_update). The optimizer too: Muon keeps its momentum where Adam keeps its first moment.
  for (const char* key : {"seed", "max_tokens", "optimizer"}) id["training"][key] = config["training"][key];
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
    const std::vector<char> bytes = io::read_file(path.string());
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

data::EncodedCorpus load_corpus(const data::CorpusOptions& o, const text::Vocabulary& vocab, const std::string& cache,
                                const char* what, const std::atomic<int>* stop, std::uint64_t checked_hash) {
  data::EncodedCorpus corpus = data::load_parallel_corpus(o, vocab, cache, cpu::compute_threads(), stop, checked_hash);
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
  const io::TextLines lines = io::read_text_lines(tsv ? data.valid_tsv : data.valid_target);
  std::vector<std::string> references;
  for (const std::int64_t line : valid.line_numbers) {
    std::string_view text = lines.lines.at(static_cast<std::size_t>(line - 1));
    if (tsv) text.remove_prefix(text.find('\t') + 1);
    references.emplace_back(text);
  }
  return references;
}

}  // namespace

// Everything that can be wrong with the command is found here, before the run directory is touched:
// the config, the model config (with the vocabulary's size), the vocabulary file and the data files.
void Trainer::check_inputs() {
  const int visible = cuda_device_count();
  devices_ = parse_devices(config_.training.devices, visible);
  device_ = devices_.front();
  for (const Device& d : devices_) {
    if (d.is_cpu()) continue;
    if (config_.training.optimizer == "muon") {
      throw Error(
          "training.optimizer muon: runs on the CPU only so far (its Newton-Schulz iteration has no CUDA "
          "kernel yet); train on " +
          d.str() + " with training.optimizer adam");
    }
    if (!ops::built_with_cuda()) {
      throw Error(
          "training.devices " + d.str() +
          ": this build of dragoman has no CUDA (build it on a machine with the CUDA toolkit), or train on cpu");
    }
    if (d.index >= visible) {
      throw Error("training.devices " + d.str() + ": no such CUDA device (" + std::to_string(visible) + " visible" +
                  (visible == 0 ? ": " + cuda_absent_reason() : std::string()) + ")");
    }
  }
  processes_ = ProcessGroup::from_environment();
  writer_ = processes_.rank == 0;
  model::ModelConfig& mc = config_.model;
  if (!config_.training.init_from.empty()) {
    load_init_model();  // the architecture, the vocabulary and its special ids are the model's
  } else {
    if (!config_.data.vocabulary.empty())
      vocab_ = std::make_unique<text::Vocabulary>(text::Vocabulary::load(config_.data.vocabulary));
    mc.src_vocab_size = mc.tgt_vocab_size = vocab_ ? vocab_->size() : config_.data.vocab_size;
    mc.pad_id = text::kPadId;
    mc.bos_id = text::kBosId;
    mc.eos_id = text::kEosId;
  }
  mc.validate();
  // Every group of training.freeze must hold parameters of this model, before anything is written.
  const std::vector<std::string> groups = freeze_groups(config_.training.freeze);
  const std::vector<model::ParameterSpec> specs =
      groups.empty() ? std::vector<model::ParameterSpec>{} : model::transformer_parameter_specs(mc);
  for (const std::string& group : groups) {
    if (std::none_of(specs.begin(), specs.end(),
                     [&](const model::ParameterSpec& s) { return is_frozen(s.name, {group}); })) {
      throw Error("training.freeze " + config_.training.freeze + ": this model has no parameter in '" + group + "'" +
                  (group == "output_bias" ? " (its output layer has no bias: model.output_bias is false)" : ""));
    }
  }
  if (config_.data.max_length + 1 > mc.max_positions) {
    throw Error("data.max_length " + std::to_string(config_.data.max_length) + " + 1 exceeds model.max_positions " +
                std::to_string(mc.max_positions));
  }
  const DataConfig& d = config_.data;
  // The training files, unless the run checked them before and they have not changed since (the
  // same size, modification time and inode as train.inputs.json recorded): a large corpus is not
  // read again at every start just to hash it.
  const data::CorpusOptions train = corpus_options(d.train_source, d.train_target, d.train_tsv, config_, true);
  train_data_stamp_ = data::input_stamp(train);
  const nlohmann::json recorded = read_json_or_null(fs::path(options_.run_dir) / "train.inputs.json");
  if (recorded.is_object() && recorded.value("stamp", "") == train_data_stamp_ && recorded.contains("hash")) {
    train_data_hash_ = std::stoull(recorded["hash"].get<std::string>(), nullptr, 16);
    spdlog::info("train: the training files are as they were checked (size, modification time): not read again");
  } else {
    train_data_hash_ = data::check_parallel_corpus(train);
  }
  has_valid_ = !d.valid_source.empty() || !d.valid_tsv.empty();
  if (has_valid_) {
    valid_data_hash_ =
        data::check_parallel_corpus(corpus_options(d.valid_source, d.valid_target, d.valid_tsv, config_, false));
  }
}

void Trainer::load_init_model() {
  const std::string& path = config_.training.init_from;
  // The header first: a file that is not a model, or a config that contradicts it, is named before
  // the weights are read.
  apply_init_model(config_, read_model_file_config(path), path);
  model::ModelFileInfo info;
  init_model_ = std::make_unique<model::Transformer>(model::load_model(path, DType::kF32, &info));
  if (info.vocabulary.empty() && info.imported.empty()) {
    throw Error("training.init_from " + path + ": the model file has no vocabulary to encode the data with");
  }
  vocab_ = std::make_unique<text::Vocabulary>(decode::model_vocabulary(info, path));
  const model::ModelConfig& mc = config_.model;
  if (vocab_->size() != mc.src_vocab_size || vocab_->target_size() != mc.tgt_vocab_size) {
    throw Error(
        fmt::format("training.init_from {}: its vocabulary has {} source and {} target pieces, its model {} and {}",
                    path, vocab_->size(), vocab_->target_size(), mc.src_vocab_size, mc.tgt_vocab_size));
  }
  // A converted Marian model whose target vocabulary is smaller than its source's has placeholder
  // target ids its output bias rules out (-1e4: convert/marian_npz.cpp); label smoothing would
  // spread probability over them (Marian smooths over its real vocabulary only) and train them.
  if (mc.label_smoothing > 0 && mc.output_bias && vocab_->target().table() != nullptr) {
    const std::vector<float> bias = init_model_->parameters().value("output.bias").to_vector<float>();
    const std::vector<std::string>& pieces = vocab_->target().table()->pieces;
    std::int64_t placeholders = 0;
    for (std::size_t id = 0; id < pieces.size() && id < bias.size(); ++id) {
      if (static_cast<std::int32_t>(id) != mc.pad_id && pieces[id].rfind("<unused:", 0) == 0 && bias[id] <= -1000.0f)
        ++placeholders;
    }
    if (placeholders > 0) {
      throw Error(fmt::format(
          "training.init_from {}: {} of its {} target ids are placeholders its output bias rules out (a converted "
          "Marian model whose target vocabulary is smaller than its source's); label smoothing would spread over "
          "them: set model.label_smoothing to 0 to fine-tune it",
          path, placeholders, mc.tgt_vocab_size));
    }
  }
  file_info_.vocabulary = info.vocabulary;
  file_info_.imported = info.imported;
  // The decoding settings it recommends and where it came from travel on; its own history (what
  // it was averaged from) does not describe the new model.
  for (const auto& [key, value] : info.metadata) {
    if (key.rfind("decoding.", 0) == 0 || key == "converted_from") file_info_.metadata[key] = value;
  }
  file_info_.metadata["init_from"] = path;
  spdlog::info("train: the model of {} (step {}{}): {} + {} layers, d_model {}, {} source and {} target pieces", path,
               info.step, info.imported.empty() ? "" : ", imported", mc.encoder_layers, mc.decoder_layers, mc.d_model,
               mc.src_vocab_size, mc.tgt_vocab_size);
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
  io::write_file_atomically(saved.string(), to_yaml(config_.to_json()));
}

// The vocabulary given in the config, RUN/vocab.model when it was built from the same data and
// settings, or a new one built there. A run with checkpoints keeps the vocabulary they use.
void Trainer::obtain_vocabulary() {
  if (vocab_) return;  // data.vocabulary, loaded by check_inputs
  const fs::path prefix = fs::path(run_) / "vocab";
  const fs::path built = fs::path(run_) / "vocab.model", record_path = fs::path(run_) / "vocab.json";
  if (!writer_) {  // process 0 has built or checked it
    vocab_ = std::make_unique<text::Vocabulary>(text::Vocabulary::load(built.string()));
    return;
  }
  const nlohmann::json record = vocabulary_record(config_, train_data_hash_);
  if (fs::exists(built)) {
    const nlohmann::json previous = read_json_or_null(record_path);
    if (previous == record) {
      vocab_ = std::make_unique<text::Vocabulary>(text::Vocabulary::load(built.string()));
      return;
    }
    if (has_checkpoints_) {
      if (!previous.is_null()) {
        spdlog::warn(
            "train: the training data changed since {} was built from it; the run's checkpoints use that "
            "vocabulary, so it stays (--overwrite starts a run with a new one)",
            built.string());
      }
      vocab_ = std::make_unique<text::Vocabulary>(text::Vocabulary::load(built.string()));
      io::write_file_atomically(record_path.string(), record.dump(2) + "\n");
      return;
    }
    spdlog::info("train: {} was built from other data or settings (or its record is missing): building it again",
                 built.string());
  }
  build_vocabulary(prefix);
  io::write_file_atomically(record_path.string(), record.dump(2) + "\n");
  vocab_ = std::make_unique<text::Vocabulary>(text::Vocabulary::load(built.string()));
}

// Trains the SentencePiece vocabulary in a child process, so a signal stops it at once.
void Trainer::build_vocabulary(const fs::path& prefix) {
  text::VocabularyOptions v;
  v.model_type = config_.data.vocab_type;
  v.vocab_size = config_.data.vocab_size;
  v.character_coverage = config_.data.character_coverage;
  v.input_sentence_size = config_.data.vocab_sample;
  v.seed = static_cast<std::uint32_t>(config_.training.seed);
  v.threads = cpu::compute_threads();
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
        text::Vocabulary::train(v).save((scratch / "vocab").string());
      },
      options_.stop_signal);
  if (!built) throw Interrupted("train: interrupted while building the vocabulary");
  fs::rename(scratch / "vocab.vocab", prefix.string() + ".vocab");
  fs::rename(scratch / "vocab.model", prefix.string() + ".model");
}

// Loads the newest checkpoint that loads (a damaged one is set aside, and the next older one is
// tried), or initialises a fresh model.
void Trainer::resume_or_initialize() {
  const model::ModelConfig& mc = config_.model;
  int set_aside = 0;
  for (const CheckpointRef& checkpoint : resumable_checkpoints(run_)) {
    const std::string model_path = checkpoint_model_path(run_, checkpoint.step, checkpoint.kind);
    const std::string state_path = checkpoint_state_path(run_, checkpoint.step, checkpoint.kind);
    model::ModelFileInfo info;
    std::unique_ptr<model::Transformer> loaded;
    TrainState state;
    for (const std::string& path : {model_path, state_path}) {  // unreadable is not damaged: say so, keep it
      if (!std::ifstream(path, std::ios::binary)) throw Error("cannot read checkpoint file " + path);
    }
    try {
      loaded = std::make_unique<model::Transformer>(model::load_model(model_path, precision_, &info, device_));
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
    if (info.vocabulary != file_info_.vocabulary || info.imported != file_info_.imported) {
      throw Error("checkpoint " + model_path + " was trained with another vocabulary than " +
                  (!config_.training.init_from.empty() ? "training.init_from's " + config_.training.init_from
                   : config_.data.vocabulary.empty()   ? (fs::path(run_) / "vocab.model").string()
                                                       : config_.data.vocabulary));
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
    if (init_model_) {
      spdlog::info("train: the run's checkpoints win over training.init_from ({}: read only when a run starts)",
                   config_.training.init_from);
      init_model_.reset();
    }
    return;
  }
  if (set_aside > 0) {  // never start afresh silently over a run's checkpoints
    throw Error("run directory " + run_ + " has no loadable checkpoint (" + std::to_string(set_aside) +
                " set aside as *.damaged in " + (fs::path(run_) / "checkpoints").string() +
                "); restore one, or use --overwrite to start afresh");
  }
  // A config far too large for the machine is refused naming the config: on the CPU before any
  // allocation (weights, gradients and Adam's two moments in fp32 beyond the physical memory), on
  // a GPU when its allocator runs out.
  double parameters = 0;
  for (const model::ParameterSpec& spec : model::transformer_parameter_specs(mc)) {
    double n = 1;
    for (const std::int64_t d : spec.shape) n *= static_cast<double>(d);
    parameters += n;
  }
  const auto too_large = [&](const std::string& why) {
    return Error(fmt::format(
        "train: the model config has {:.3g} parameters ({:.3g} GB with gradients and Adam's moments in fp32), "
        "more than {} can hold ({}); lower model.d_model, d_ff, the layers or the vocabulary",
        parameters, parameters * 16 / 1e9, device_.str(), why));
  };
  const double physical = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (device_.is_cpu() && physical > 0 && parameters * 16 > physical) {
    throw too_large(fmt::format("{:.3g} GB of memory", physical / 1e9));
  }
  try {
    model_ = std::make_unique<model::Transformer>(mc, precision_, device_);
  } catch (const OutOfMemory& e) {
    throw too_large(e.what());
  }
  if (init_model_) {  // the same config but for the regularisation: the same parameters, in the same places
    model_->parameters().values().copy_from(init_model_->parameters().values().to(device_));
    model_->refresh_compute_weights();
    init_model_.reset();
    spdlog::info("train: starting from the weights of {}; the optimizer and the schedule start afresh",
                 config_.training.init_from);
  } else {
    // The same weights on every device (Philox, per element).
    model_->initialize(config_.training.seed, config_.training.zero_init_residual);
  }
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
  if (state_.budget_updates > 0 && state_.step >= state_.budget_updates) {
    return "the " + std::to_string(state_.budget_updates) + " updates that fit its time budget";
  }
  if (t.max_minutes > 0 && budget_clock() >= t.max_minutes * 60) {
    return "training.max_minutes " + fmt::format("{:g}", t.max_minutes) + ": the time budget is spent";
  }
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
  if (writer_) {  // what the next start trusts for files of this size and time
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(train_.inputs_hash));
    io::write_file_atomically((fs::path(run_) / "train.inputs.json").string(),
                              nlohmann::json{{"stamp", train_data_stamp_}, {"hash", hash}}.dump(1) + "\n");
  }
  if (has_valid_) {
    valid_ =
        load_corpus(corpus_options(d.valid_source, d.valid_target, d.valid_tsv, config_, false), *vocab_,
                    (fs::path(run_) / "valid.cache").string(), "validation", options_.stop_signal, valid_data_hash_);
    if (config_.training.valid_bleu) valid_references_ = read_references(d, valid_);
  } else if (config_.training.valid_bleu) {
    spdlog::warn("train: training.valid_bleu is on but there is no dev set (data.valid_source/valid_tsv)");
  }
}

// (check_inputs has checked that every group holds parameters of this model.) Their Adam moments
// (Muon's momentum) are zeroed too: a run that froze them from its start has zeros there anyway, and
// one that starts freezing them on a resume would otherwise go on moving them with the old moments.
void Trainer::find_frozen_parameters() {
  const std::vector<std::string> groups = freeze_groups(config_.training.freeze);
  if (groups.empty()) return;
  std::int64_t frozen = 0;
  for (const model::ParameterEntry& entry : model_->parameters().entries()) {
    if (!is_frozen(entry.spec.name, groups)) continue;
    frozen_.push_back(entry.spec.name);
    frozen += entry.numel;
    state_.adam_m.narrow(0, entry.offset, entry.numel).fill_zero();
    state_.adam_v.narrow(0, entry.offset, entry.numel).fill_zero();
  }
  spdlog::info("train: training.freeze {}: {} tensors, {} of {} parameters kept as they are", config_.training.freeze,
               frozen_.size(), frozen, model_->parameters().size());
}

// After the gradients are summed over the workers, before their norm: a zero gradient leaves a
// parameter exactly as it is under Adam (its moments stay zero, its step 0 / (0 + eps)) and Muon
// (training.freeze refuses a weight decay).
void Trainer::zero_frozen_gradients() {
  for_each_worker([&](std::size_t w) {
    model::ParameterSet& params = worker_model(w).parameters();
    for (const std::string& name : frozen_) params.grad(name).fill_zero();
  });
}

void Trainer::report_unknown_tokens() const {
  const auto unknown_id = [](const text::Vocabulary& side) {
    return side.table() != nullptr ? side.table()->unk_id : text::kUnkId;
  };
  const auto count = [](const data::Column<std::int32_t>& tokens, std::int32_t id) {
    return static_cast<std::int64_t>(std::count(tokens.begin(), tokens.end(), id));
  };
  const auto report = [&](const data::EncodedCorpus& corpus, const char* what) {
    const std::int64_t source = count(corpus.src_tokens, unknown_id(*vocab_));
    const std::int64_t target = count(corpus.tgt_tokens, unknown_id(vocab_->target()));
    if (source == 0 && target == 0) return;
    spdlog::warn(
        "train: the {} pairs hold {} source tokens of {} ({:.3f} %) and {} target tokens of {} ({:.3f} %) that the "
        "vocabulary does not know (<unk>){}",
        what, source, corpus.src_tokens.size(),
        100.0 * static_cast<double>(source) / std::max<double>(1, corpus.src_tokens.size()), target,
        corpus.tgt_tokens.size(), 100.0 * static_cast<double>(target) / std::max<double>(1, corpus.tgt_tokens.size()),
        target > 0 && &corpus == &train_ ? ": the model learns to write <unk> where the target has them" : "");
  };
  report(train_, "training");
  if (has_valid_) report(valid_, "validation");
}

}  // namespace dragoman::train::detail
