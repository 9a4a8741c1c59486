// `dragoman translate`: translates text one sentence per line with a model file's embedded
// vocabulary and beam search (options -> decode/translator.h). Input is read in chunks, so a file of
// any size streams; each chunk is sorted by length for batching and written back in input order.
// Output to a file is atomic: it appears, complete, when the translation ends; an error or a
// SIGINT/SIGTERM (exit 128 + signal) leaves no partial file.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/stop_signal.h"
#include "core/allocator.h"
#include "core/device.h"
#include "core/error.h"
#include "core/threads.h"
#include "core/timing.h"
#include "decode/translator.h"
#include "io/atomic_file.h"
#include "io/line_reader.h"
#include "model/checkpoint.h"
#include "text/utf8.h"

namespace dragoman::cli {
namespace {

struct TranslateCliOptions {
  std::string model;
  std::string input = "-";
  std::string output = "-";
  int beam = 4;
  double alpha = 0.6;
  std::string normalization = "gnmt";
  double word_reward = 0;
  double max_length_a = 1.0;
  std::int64_t max_length_b = 50;
  int nbest = 0;
  bool scores = false;
  std::int64_t batch_tokens = 2048;
  std::int64_t batch_sentences = 64;
  std::int64_t chunk_lines = 10000;
  std::string device = "cpu";
  int threads = 0;
  bool replace_invalid = false;
  bool progress = false;
};

// Thrown from the progress callback when a signal asks translate to stop.
struct Interrupted {};

// Standard output, or a file written atomically.
class Output {
 public:
  explicit Output(const std::string& path) {
    if (path != "-") file_.emplace(path);
  }
  void write(const std::string& text) {
    if (file_) {
      file_->append(text);
    } else if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
      throw Error("cannot write to standard output");
    }
  }
  void commit() {
    if (file_) file_->commit();
  }
  std::string temporary_path() const { return file_ ? file_->temporary_path() : std::string(); }

 private:
  std::optional<AtomicFileWriter> file_;
};

// "lines done / total | lines/s | ETA" on standard error: redrawn in place on a terminal (at most 5
// times a second), a log line every 10 seconds otherwise.
class Progress {
 public:
  Progress(bool enabled, std::int64_t total) : enabled_(enabled), tty_(::isatty(STDERR_FILENO) != 0), total_(total) {}

  void update(std::int64_t done) {
    if (!enabled_) return;
    const double elapsed = seconds_since(start_);
    if (elapsed - last_ < (tty_ ? 0.2 : 10.0)) return;
    last_ = elapsed;
    const double rate = static_cast<double>(done) / std::max(elapsed, 1e-9);
    std::string line = "translate: " + std::to_string(done);
    if (total_ >= 0) line += "/" + std::to_string(total_);
    char rate_text[64];
    std::snprintf(rate_text, sizeof rate_text, " lines | %.1f lines/s", rate);
    line += rate_text;
    if (total_ >= 0 && rate > 0) line += " | ETA " + format_hms(static_cast<double>(total_ - done) / rate);
    if (tty_) {
      std::fprintf(stderr, "\r%s\033[K", line.c_str());
      drawn_ = true;
    } else {
      spdlog::info("{}", line);
    }
  }
  void finish() {
    if (drawn_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  bool enabled_, tty_;
  std::int64_t total_;
  Clock::time_point start_ = Clock::now();
  double last_ = 0;
  bool drawn_ = false;
};

std::string format_score(double score) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", score);
  return text;
}

// The output lines of one input line (0-based `index`).
void format_translation(const Translation& t, std::int64_t index, const TranslateCliOptions& o, std::string& out) {
  if (o.nbest > 0) {
    for (const TranslatedHypothesis& h : t.nbest) {
      out += std::to_string(index) + " ||| " + h.text + " ||| " + format_score(h.score) + "\n";
    }
  } else if (o.scores) {
    out += format_score(t.nbest.front().score) + "\t" + t.nbest.front().text + "\n";
  } else {
    out += t.nbest.front().text + "\n";
  }
}

SearchOptions search_options(const TranslateCliOptions& o) {
  SearchOptions s;
  s.beam = o.beam;
  s.alpha = o.alpha;
  s.length_penalty = o.normalization == "gnmt"    ? LengthPenalty::kGnmt
                     : o.normalization == "power" ? LengthPenalty::kPower
                                                  : LengthPenalty::kNone;
  s.word_reward = o.word_reward;
  s.max_length_a = o.max_length_a;
  s.max_length_b = o.max_length_b;
  s.nbest = std::max(o.nbest, 1);
  return s;
}

int run_translate(const TranslateCliOptions& o) {
  if (!Device::parse(o.device).is_cpu()) {
    throw Error("translate: --device " + o.device +
                ": this version translates on the CPU only (no CUDA model "
                "kernels yet)");
  }
  if (o.nbest > o.beam) {
    throw CLI::ValidationError("--nbest " + std::to_string(o.nbest) + " is larger than --beam " +
                               std::to_string(o.beam));
  }
  if (o.nbest > 0 && o.scores) throw CLI::ValidationError("--scores is for 1-best output; n-best lines have scores");
  set_compute_threads(o.threads);
  LineReader reader(o.input);  // a missing input is reported before the model is loaded

  ModelFileInfo info;
  const Transformer model = load_model(o.model, DType::kF32, &info);
  if (info.vocabulary.empty()) {
    throw Error(o.model +
                ": the model file holds no vocabulary (vocabulary.sentencepiece); translate needs a model "
                "written by dragoman train or average-checkpoints");
  }
  const Vocabulary vocabulary = Vocabulary::from_bytes(info.vocabulary, o.model + " (vocabulary)");
  TranslatorOptions options;
  options.search = search_options(o);
  options.batch_tokens = o.batch_tokens;
  options.batch_sentences = o.batch_sentences;
  const Translator translator(model, vocabulary, options);
  spdlog::info(
      "translate: {} (step {}), beam {}, {} length normalisation alpha {}, output at most {} x source + {} "
      "tokens, {} thread(s)",
      o.model, info.step, o.beam, o.normalization, o.alpha, o.max_length_a, o.max_length_b, compute_threads());

  StopSignals signals;
  Output output(o.output);
  signals.remove_on_abort(output.temporary_path());
  const bool show_progress = o.progress || ::isatty(STDERR_FILENO) != 0;
  Progress progress(show_progress, show_progress ? count_lines(o.input) : -1);
  const Clock::time_point start = Clock::now();
  std::int64_t lines_done = 0, source_tokens = 0, target_tokens = 0, truncated = 0, replaced_lines = 0;
  std::vector<std::string> chunk;
  std::string line;
  bool more = true;
  try {
    while (more) {
      chunk.clear();
      while (static_cast<std::int64_t>(chunk.size()) < o.chunk_lines && (more = reader.next(line))) {
        const std::size_t bad = utf8::find_invalid(line);
        if (bad != std::string::npos) {
          if (!o.replace_invalid) {
            throw_input_error(
                reader.name(), static_cast<std::size_t>(reader.line_number()),
                "invalid UTF-8 at byte " + std::to_string(bad + 1) +
                    " of the line (expected UTF-8 text; --replace-invalid replaces bad bytes with U+FFFD)");
          }
          line = utf8::replace_invalid(line);
          ++replaced_lines;
        }
        chunk.push_back(std::move(line));
      }
      if (chunk.empty()) break;
      const std::vector<Translation> translations = translator.translate(chunk, [&](std::int64_t done) {
        if (signals.received() != 0) throw Interrupted{};
        progress.update(lines_done + done);
      });
      std::string text;
      for (std::size_t i = 0; i < translations.size(); ++i) {
        const Translation& t = translations[i];
        const std::int64_t index = lines_done + static_cast<std::int64_t>(i);
        if (t.truncated && ++truncated <= 10) {
          spdlog::warn("translate: {}:{}: longer than the model's {} positions: cut to its first {} tokens",
                       reader.name(), index + 1, model.config().max_positions, t.source_tokens);
        }
        source_tokens += t.source_tokens;
        target_tokens += static_cast<std::int64_t>(t.nbest.front().tokens.size());
        format_translation(t, index, o, text);
      }
      output.write(text);
      lines_done += static_cast<std::int64_t>(chunk.size());
      if (signals.received() != 0) throw Interrupted{};
    }
  } catch (const Interrupted&) {
    progress.finish();
    spdlog::warn("translate: interrupted by signal {} after {} lines; {}", signals.received(), lines_done,
                 o.output == "-" ? "the lines written so far are complete" : "no output file written");
    return 128 + signals.received();
  }
  output.commit();
  progress.finish();
  const double seconds = std::max(seconds_since(start), 1e-9);
  spdlog::info(
      "translate: {} lines, {} source tokens, {} target tokens (1-best) in {:.2f} s: {:.1f} lines/s, {:.0f} "
      "source tokens/s, {:.0f} target tokens/s",
      lines_done, source_tokens, target_tokens, seconds, static_cast<double>(lines_done) / seconds,
      static_cast<double>(source_tokens) / seconds, static_cast<double>(target_tokens) / seconds);
  const AllocatorStats memory = allocator_for(Device::cpu()).stats();
  spdlog::debug("translate: CPU allocator: peak in use {} MiB, peak reserved {} MiB", memory.peak_in_use >> 20,
                memory.peak_reserved >> 20);
  if (truncated > 0) {
    spdlog::warn("translate: {} line(s) longer than {} tokens were truncated", truncated, model.config().max_positions);
  }
  if (replaced_lines > 0) {
    spdlog::warn("translate: {} line(s) had invalid UTF-8, replaced with U+FFFD", replaced_lines);
  }
  return 0;
}

}  // namespace

Subcommand add_translate(CLI::App& app) {
  auto o = std::make_shared<TranslateCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "translate",
      "Translate text, one sentence per line, with beam search (the paper: beam 4, GNMT length penalty 0.6, at most "
      "source length + 50 tokens); output in input order, one line per input line");
  sub->add_option("--model,-m", o->model, "Model file (from train or average-checkpoints; holds the vocabulary)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--input,-i", o->input, "Input text, one sentence per line ('-': standard input)")
      ->capture_default_str();
  sub->add_option("--output,-o", o->output, "Output file, written atomically ('-': standard output)")
      ->capture_default_str();
  sub->add_option("--beam,-b", o->beam, "Beam size (1: greedy decoding)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  sub->add_option("--length-penalty", o->alpha, "Length normalisation exponent alpha")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  sub->add_option("--length-normalization", o->normalization,
                  "gnmt: ((5+|Y|)/6)^alpha (the paper); power: |Y|^alpha (fairseq, Marian); none")
      ->check(CLI::IsMember({"gnmt", "power", "none"}))
      ->capture_default_str();
  sub->add_option("--word-reward", o->word_reward, "Added to a hypothesis's score per output token (EOS included)")
      ->capture_default_str();
  sub->add_option("--max-length-a", o->max_length_a, "Output at most a * source tokens + b tokens (before EOS)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  sub->add_option("--max-length-b", o->max_length_b, "See --max-length-a")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--nbest,-n", o->nbest,
                  "Write the K best hypotheses of each line as 'i ||| text ||| score' (K <= beam)")
      ->check(CLI::Range(1, 1024));
  sub->add_flag("--scores", o->scores, "Write 'score<TAB>text' for the 1-best output");
  sub->add_option("--batch-tokens", o->batch_tokens, "Source tokens per batch, padding counted")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
      ->capture_default_str();
  sub->add_option("--batch-sentences", o->batch_sentences, "Sentences per batch, at most")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
      ->capture_default_str();
  sub->add_option("--chunk-lines", o->chunk_lines, "Lines read, sorted by length and translated at a time")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
      ->capture_default_str();
  sub->add_option("--device", o->device, "cpu (CUDA decoding is not in this version)")->capture_default_str();
  sub->add_option("--threads", o->threads, "Compute threads (0: all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_flag("--replace-invalid", o->replace_invalid,
                "Replace invalid UTF-8 with U+FFFD (counted) instead of stopping with an error");
  sub->add_flag("--progress", o->progress, "Report progress on standard error (always on when it is a terminal)");
  return {sub, [o] { return run_translate(*o); }};
}

}  // namespace dragoman::cli
