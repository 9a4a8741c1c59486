// The training loop (see trainer.h).
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

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
#include "model/checkpoint.h"
#include "model/transformer.h"
#include "ops/adam.h"
#include "ops/elementwise.h"
#include "text/vocabulary.h"
#include "train/schedule.h"
#include "train/train_state.h"
#include "train/update.h"

namespace dragoman {

namespace fs = std::filesystem;

std::string checkpoint_model_path(const std::string& run_dir, std::int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoint-%08lld.safetensors", static_cast<long long>(step));
  return (fs::path(run_dir) / "checkpoints" / name).string();
}

std::string checkpoint_state_path(const std::string& run_dir, std::int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoint-%08lld.state.safetensors", static_cast<long long>(step));
  return (fs::path(run_dir) / "checkpoints" / name).string();
}

namespace {

// The keys that define a run: changing any of them in an existing run directory needs --overwrite.
// (Run length, logging, validation and checkpoint intervals may change between restarts.)
nlohmann::json run_identity(const nlohmann::json& config) {
  nlohmann::json id = {{"model", config["model"]}, {"data", config["data"]}};
  for (const char* key : {"seed", "max_tokens", "update_freq", "lr_factor", "warmup_steps", "adam_beta1", "adam_beta2",
                          "adam_eps", "weight_decay", "clip_norm"}) {
    id["training"][key] = config["training"][key];
  }
  return id;
}

// Checks the run directory against the config (or clears it with overwrite) and writes config.yaml.
void prepare_run_dir(const TrainConfig& config, const TrainOptions& options) {
  const fs::path run(options.run_dir);
  const fs::path saved = run / "config.yaml";
  if (fs::exists(saved)) {
    if (options.overwrite) {
      spdlog::warn("train: --overwrite: removing the previous run in {}", options.run_dir);
      for (const char* name : {"checkpoints", "metrics.jsonl", "train.cache", "valid.cache", "vocab.model",
                               "vocab.vocab", "config.yaml", "valid-translation.txt"}) {
        fs::remove_all(run / name);
      }
    } else {
      const nlohmann::json before = run_identity(TrainConfig::load(saved.string(), {}).to_json());
      const nlohmann::json now = run_identity(config.to_json());
      const std::string difference = first_json_difference(before, now);
      if (!difference.empty()) {
        throw Error("run directory " + options.run_dir + " holds a run with another config (" + difference +
                    "); use another --run, or --overwrite to start afresh");
      }
    }
  }
  fs::create_directories(run / "checkpoints");
  write_file_atomically(saved.string(), to_yaml(config.to_json()));
}

Vocabulary obtain_vocabulary(const TrainConfig& config, const std::string& run_dir) {
  if (!config.data.vocabulary.empty()) return Vocabulary::load(config.data.vocabulary);
  const fs::path built = fs::path(run_dir) / "vocab.model";
  if (fs::exists(built)) return Vocabulary::load(built.string());
  VocabularyOptions v;
  v.model_type = config.data.vocab_type;
  v.vocab_size = config.data.vocab_size;
  v.character_coverage = config.data.character_coverage;
  v.input_sentence_size = config.data.vocab_sample;
  v.seed = static_cast<std::uint32_t>(config.training.seed);
  v.threads = static_cast<int>(config.training.threads > 0 ? config.training.threads : default_thread_count());
  std::vector<std::string> temporary;
  if (!config.data.train_tsv.empty()) {
    temporary = {(fs::path(run_dir) / "vocab-input.src").string(), (fs::path(run_dir) / "vocab-input.tgt").string()};
    data::split_tsv_file(config.data.train_tsv, temporary[0], temporary[1]);
    v.inputs = temporary;
  } else {
    v.inputs = {config.data.train_source, config.data.train_target};
  }
  spdlog::info("train: building a shared {} vocabulary of {} pieces (dragoman build-vocab)", v.model_type,
               v.vocab_size);
  const Vocabulary vocab = Vocabulary::train(v);
  for (const std::string& path : temporary) fs::remove(path);
  vocab.save((fs::path(run_dir) / "vocab").string());
  return Vocabulary::load(built.string());
}

data::EncodedCorpus load_corpus(const std::string& source, const std::string& target, const std::string& tsv,
                                const TrainConfig& config, const Vocabulary& vocab, const std::string& cache,
                                const char* what, bool filter) {
  data::CorpusOptions o;
  o.source = source;
  o.target = target;
  o.tsv = tsv;
  o.max_length = filter ? config.data.max_length : std::min<std::int64_t>(config.model.max_positions - 1, 1 << 20);
  o.max_ratio = filter ? config.data.max_ratio : 0.0;
  data::EncodedCorpus corpus = data::load_parallel_corpus(o, vocab, cache, compute_threads());
  const data::FilterCounts& n = corpus.counts;
  spdlog::info("train: {} pairs: {} read, {} kept; dropped {} empty, {} longer than {} tokens, {} with length ratio "
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

}  // namespace

std::vector<std::int64_t> checkpoint_steps(const std::string& run_dir) {
  std::vector<std::int64_t> steps;
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  if (!fs::exists(dir)) return steps;
  const std::regex pattern(R"(checkpoint-(\d+)\.safetensors)");
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, pattern)) {
      const std::int64_t step = std::stoll(m[1].str());
      if (fs::exists(checkpoint_state_path(run_dir, step))) steps.push_back(step);
    }
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

namespace {

// Points `link` at `target` atomically (a hard link under a temporary name, renamed over).
void link_atomically(const std::string& target, const std::string& link) {
  const std::string temporary = link + ".tmp-link";
  fs::remove(temporary);
  fs::create_hard_link(target, temporary);
  fs::rename(temporary, link);
}

// Keeps metrics.jsonl lines up to `step` (a resumed run rewrites what came after its checkpoint).
void truncate_metrics(const std::string& path, std::int64_t step) {
  if (!fs::exists(path)) return;
  const std::vector<char> bytes = read_file(path);
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  std::string line, kept;
  while (std::getline(in, line)) {
    try {
      if (nlohmann::json::parse(line).value("step", std::int64_t{0}) > step) continue;
    } catch (const nlohmann::json::exception&) {
      continue;  // a torn last line
    }
    kept += line + "\n";
  }
  write_file_atomically(path, kept);
}

class Trainer {
 public:
  Trainer(const TrainConfig& config, const TrainOptions& options) : config_(config), options_(options) {}
  TrainResult run();

 private:
  void save_checkpoint();
  void validate(TrainResult& result);
  double translate_valid();
  void append_metrics(const nlohmann::json& line);

  TrainConfig config_;
  TrainOptions options_;
  std::unique_ptr<Vocabulary> vocab_;
  std::unique_ptr<Transformer> model_;
  TrainState state_;
  data::EncodedCorpus train_, valid_;
  std::vector<std::string> valid_references_;  // the target text of each kept dev pair (valid_bleu)
  bool has_valid_ = false;
  std::int64_t saved_step_ = -1;
  Clock::time_point last_save_ = Clock::now();
};

void Trainer::append_metrics(const nlohmann::json& line) {
  std::ofstream out(fs::path(options_.run_dir) / "metrics.jsonl", std::ios::app);
  out << line.dump() << "\n";
  if (!out) throw Error("cannot append to " + (fs::path(options_.run_dir) / "metrics.jsonl").string());
}

void Trainer::save_checkpoint() {
  const std::string& run = options_.run_dir;
  const std::string model_path = checkpoint_model_path(run, state_.step);
  const std::string state_path = checkpoint_state_path(run, state_.step);
  ModelFileInfo info;
  info.step = state_.step;
  info.vocabulary = vocab_->bytes();
  save_model(model_path, *model_, info);
  save_train_state(state_path, state_);
  const fs::path dir = fs::path(run) / "checkpoints";
  link_atomically(model_path, (dir / "checkpoint-last.safetensors").string());
  link_atomically(state_path, (dir / "checkpoint-last.state.safetensors").string());
  const std::vector<std::int64_t> steps = checkpoint_steps(run);
  for (std::size_t i = 0; i + static_cast<std::size_t>(config_.checkpoint.keep_last) < steps.size(); ++i) {
    fs::remove(checkpoint_model_path(run, steps[i]));
    fs::remove(checkpoint_state_path(run, steps[i]));
  }
  saved_step_ = state_.step;
  last_save_ = Clock::now();
  spdlog::info("train: saved checkpoint at step {} ({})", state_.step, model_path);
}

// Translates the dev set with the current model (the paper's decoding: GNMT alpha 0.6, at most
// source + 50 tokens; beam training.valid_beam), writes the translations to the run directory's
// valid-translation.txt and returns their sacreBLEU (13a, exp smoothing) against the references.
double Trainer::translate_valid() {
  TranslatorOptions o;
  o.search.beam = static_cast<int>(config_.training.valid_beam);
  o.batch_tokens = config_.training.max_tokens;
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
  write_file_atomically((fs::path(options_.run_dir) / "valid-translation.txt").string(), text);
  return eval::corpus_score(eval::Bleu(eval::BleuOptions{}), corpus, compute_threads()).score;
}

void Trainer::validate(TrainResult& result) {
  const TrainingConfig& t = config_.training;
  double loss = 0, nll = 0;
  std::int64_t tokens = 0;
  for (const auto& pairs : data::make_token_batches(valid_, config_.training.max_tokens, 0, 0)) {
    const LossResult r = model_->forward_loss(data::make_batch(valid_, pairs, model_->config()));
    loss += r.loss_sum;
    nll += r.nll_sum;
    tokens += r.tokens;
  }
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
    ModelFileInfo info;
    info.step = state_.step;
    info.vocabulary = vocab_->bytes();
    save_model((fs::path(options_.run_dir) / "checkpoints" / "checkpoint-best.safetensors").string(), *model_, info);
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

TrainResult Trainer::run() {
  const TrainingConfig& t = config_.training;
  set_compute_threads(static_cast<int>(t.threads));
  prepare_run_dir(config_, options_);
  spdlog::info("train: config ({}/config.yaml):\n{}", options_.run_dir, to_yaml(config_.to_json()));
  const std::string run = options_.run_dir;

  vocab_ = std::make_unique<Vocabulary>(obtain_vocabulary(config_, run));
  ModelConfig& mc = config_.model;
  mc.src_vocab_size = mc.tgt_vocab_size = vocab_->size();
  mc.pad_id = kPadId;
  mc.bos_id = kBosId;
  mc.eos_id = kEosId;
  mc.validate();
  if (config_.data.max_length + 1 > mc.max_positions) {
    throw Error("data.max_length " + std::to_string(config_.data.max_length) + " + 1 exceeds model.max_positions " +
                std::to_string(mc.max_positions));
  }

  train_ = load_corpus(config_.data.train_source, config_.data.train_target, config_.data.train_tsv, config_,
                       *vocab_, (fs::path(run) / "train.cache").string(), "training", true);
  has_valid_ = !config_.data.valid_source.empty() || !config_.data.valid_tsv.empty();
  if (has_valid_) {
    valid_ = load_corpus(config_.data.valid_source, config_.data.valid_target, config_.data.valid_tsv, config_,
                         *vocab_, (fs::path(run) / "valid.cache").string(), "validation", false);
    if (t.valid_bleu) valid_references_ = read_references(config_.data, valid_);
  } else if (t.valid_bleu) {
    spdlog::warn("train: training.valid_bleu is on but there is no dev set (data.valid_source/valid_tsv)");
  }

  // A fresh model, or the newest complete checkpoint.
  model_ = std::make_unique<Transformer>(mc, DType::kF32);
  const std::vector<std::int64_t> steps = checkpoint_steps(run);
  if (steps.empty()) {
    model_->initialize(t.seed);
    state_.adam_m = Tensor::zeros({model_->parameters().size()}, DType::kF32);
    state_.adam_v = Tensor::zeros({model_->parameters().size()}, DType::kF32);
    truncate_metrics((fs::path(run) / "metrics.jsonl").string(), 0);
  } else {
    const std::int64_t step = steps.back();
    Transformer loaded = load_model(checkpoint_model_path(run, step), DType::kF32);
    if (loaded.config() != mc) throw Error("checkpoint " + checkpoint_model_path(run, step) + " has another model config");
    model_ = std::make_unique<Transformer>(std::move(loaded));
    state_ = load_train_state(checkpoint_state_path(run, step));
    if (state_.step != step || state_.adam_m.numel() != model_->parameters().size()) {
      throw Error("checkpoint state " + checkpoint_state_path(run, step) + " does not match its model file");
    }
    saved_step_ = step;
    truncate_metrics((fs::path(run) / "metrics.jsonl").string(), step);
    spdlog::info("train: resuming from step {} (epoch {}, batch {})", step, state_.epoch + 1, state_.batch_index);
  }
  spdlog::info("train: {} parameters, {} training pairs, batches of at most {} tokens x {} per update",
               model_->parameters().size(), train_.size(), t.max_tokens, t.update_freq);

  ParameterSet& params = model_->parameters();
  std::vector<std::vector<std::int64_t>> plan = data::make_token_batches(train_, t.max_tokens, t.seed, state_.epoch);
  TrainResult result;
  const Clock::time_point start = Clock::now();
  const std::int64_t start_step = state_.step;
  const double start_elapsed = state_.elapsed_seconds;
  Clock::time_point window_start = Clock::now();
  double window_loss = 0, window_nll = 0;
  std::int64_t window_tokens = 0;
  double grad_norm = 0;

  while (true) {
    if (t.max_steps > 0 && state_.step >= t.max_steps) break;
    if (t.max_epochs > 0 && state_.epoch >= t.max_epochs) break;
    if (options_.stop_signal != nullptr && options_.stop_signal->load() != 0) {
      result.interrupted = true;
      break;
    }
    // The update's batches (crossing into the next epoch when this one ends).
    std::vector<Batch> batches;
    while (static_cast<std::int64_t>(batches.size()) < t.update_freq) {
      if (state_.batch_index >= static_cast<std::int64_t>(plan.size())) {
        ++state_.epoch;
        state_.batch_index = 0;
        if (t.max_epochs > 0 && state_.epoch >= t.max_epochs) break;
        plan = data::make_token_batches(train_, t.max_tokens, t.seed, state_.epoch);
        spdlog::info("train: epoch {}", state_.epoch + 1);
      }
      batches.push_back(data::make_batch(train_, plan[static_cast<std::size_t>(state_.batch_index++)], mc));
    }
    if (batches.empty()) break;

    // Dropout streams per batch: a function of (seed, step, k) only.
    const UpdateLoss update = accumulate_gradients(*model_, batches, true, t.seed,
                                                   static_cast<std::uint64_t>(state_.step * t.update_freq));
    window_loss += update.loss_sum;
    window_nll += update.nll_sum;
    grad_norm = std::sqrt(ops::sum_squares(params.grads()));
    if (t.clip_norm > 0 && grad_norm > t.clip_norm) ops::scale_(params.grads(), t.clip_norm / grad_norm);
    cpu::AdamHyper hyper;
    hyper.step = state_.step + 1;
    hyper.lr = noam_learning_rate(hyper.step, mc.d_model, t.warmup_steps, t.lr_factor);
    hyper.beta1 = t.adam_beta1;
    hyper.beta2 = t.adam_beta2;
    hyper.eps = t.adam_eps;
    hyper.weight_decay = t.weight_decay;
    ops::adam_step(params.values(), params.grads(), state_.adam_m, state_.adam_v, hyper);
    ++state_.step;
    state_.tokens_seen += update.tokens;
    window_tokens += update.tokens;
    state_.elapsed_seconds = start_elapsed + seconds_since(start);

    if (state_.step % t.log_every == 0) {
      const double window_seconds = seconds_since(window_start);
      const double loss = window_loss / static_cast<double>(window_tokens);
      const double ppl = std::exp(window_nll / static_cast<double>(window_tokens));
      const double per_step = seconds_since(start) / static_cast<double>(state_.step - start_step);
      const std::string eta =
          t.max_steps > 0 ? format_hms(per_step * static_cast<double>(t.max_steps - state_.step)) : std::string("-");
      const double tokens_per_second = static_cast<double>(window_tokens) / window_seconds;
      spdlog::info("step {} | epoch {} | loss {:.4f} | ppl {:.2f} | lr {:.3e} | gnorm {:.3f} | {:.0f} tgt tok/s | "
                   "elapsed {} | ETA {}",
                   state_.step, state_.epoch + 1, loss, ppl, hyper.lr, grad_norm, tokens_per_second,
                   format_hms(state_.elapsed_seconds), eta);
      append_metrics({{"step", state_.step},
                      {"epoch", state_.epoch + 1},
                      {"loss", loss},
                      {"ppl", ppl},
                      {"lr", hyper.lr},
                      {"gnorm", grad_norm},
                      {"tgt_tokens_per_s", tokens_per_second},
                      {"elapsed_s", state_.elapsed_seconds}});
      result.last_train_loss = loss;
      window_loss = window_nll = 0;
      window_tokens = 0;
      window_start = Clock::now();
    }
    if (has_valid_ && t.valid_every > 0 && state_.step % t.valid_every == 0) {
      validate(result);
      if (t.patience > 0 && state_.bad_validations >= t.patience) {
        spdlog::info("train: no improvement in {} validations: stopping early", state_.bad_validations);
        result.early_stopped = true;
      }
    }
    const CheckpointConfig& c = config_.checkpoint;
    if ((c.every_steps > 0 && state_.step % c.every_steps == 0) ||
        (c.every_minutes > 0 && seconds_since(last_save_) >= c.every_minutes * 60)) {
      save_checkpoint();
    }
    if (result.early_stopped) break;
  }
  if (state_.step != saved_step_) save_checkpoint();
  result.step = state_.step;
  return result;
}

}  // namespace

TrainResult train(const TrainConfig& config, const TrainOptions& options) {
  config.validate();
  if (options.run_dir.empty()) throw Error("train: no run directory");
  Trainer trainer(config, options);
  return trainer.run();
}

}  // namespace dragoman
