// `dragoman translate`: translates text one sentence per line with a model file's embedded
// vocabulary and beam search (options -> decode/translator.h). Input is read in chunks, so a file of
// any size streams; each chunk is sorted by length for batching and written back in input order.
// A chunk ends early when a pipe or terminal has no more input for now, and the lines finished
// are written (and flushed) after each batch, so interactive use sees each translation at once.
// Output to a file is atomic: it appears, complete, when the translation ends; an error or a
// SIGINT/SIGTERM (exit 128 + signal) leaves no partial file. On standard output a signal keeps
// the lines already written, all complete and in input order.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/decoding_options.h"
#include "cli/stop_signal.h"
#include "cli/validators.h"
#include "core/allocator.h"
#include "device/device.h"
#include "base/error.h"
#include "device/cpu/threads.h"
#include "base/timing.h"
#include "decode/attention_svg.h"
#include "decode/model_files.h"
#include "decode/translation_output.h"
#include "decode/translator.h"
#include "io/atomic_file.h"
#include "io/line_reader.h"
#include "model/checkpoint.h"
#include "base/utf8.h"
#include "ops/linear.h"

namespace dragoman::cli {
namespace {

struct TranslateCliOptions {
  std::vector<std::string> models;  // one, or an ensemble
  std::string input = "-";
  std::string output = "-";
  DecodingOptions decoding;  // the search, device, batches
  int nbest = 0;
  bool scores = false;
  std::string output_format = "text";
  bool word_scores = false;
  std::string alignment;    // "", "hard" or "soft"
  int attention_layer = 0;  // 1-based; 0: the last
  int attention_head = 0;   // 1-based; 0: the average of the heads
  std::string attention_dir;
  std::int64_t chunk_lines = 10000;
  bool replace_invalid = false;
  bool deterministic = false;
  bool progress = false;
};

// Thrown from the per-batch callback when a signal asks translate to stop.
struct StopRequested {};

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

// `decoding`'s search, with the n-best list and the attention the output needs.
SearchOptions search_options(const DecodingOptions& decoding, const TranslateCliOptions& o) {
  SearchOptions s = decoding.search_options();
  s.nbest = std::max(o.nbest, 1);
  s.record_attention = !o.alignment.empty() || !o.attention_dir.empty();
  s.attention.layer = o.attention_layer - 1;
  s.attention.head = o.attention_head - 1;
  return s;
}

OutputOptions output_options(const TranslateCliOptions& o) {
  OutputOptions out;
  out.format = o.output_format == "json" ? OutputFormat::kJson : OutputFormat::kText;
  out.nbest = o.nbest;
  out.scores = o.scores;
  out.word_scores = o.word_scores;
  out.alignment = o.alignment == "hard"   ? AlignmentKind::kHard
                  : o.alignment == "soft" ? AlignmentKind::kSoft
                                          : AlignmentKind::kNone;
  return out;
}

// Whether the output needs each input line's words (alignments, pictures).
bool needs_source_words(const TranslateCliOptions& o) { return !o.alignment.empty() || !o.attention_dir.empty(); }

// What the summary and the warnings count.
struct Totals {
  std::int64_t lines = 0, source_tokens = 0, target_tokens = 0, truncated = 0, replaced_lines = 0;
};

// A chunk of input lines, encoded.
struct Chunk {
  std::vector<std::vector<std::int32_t>> sources;
  std::vector<SourceWords> words;   // each line's, when the output needs them
  std::int64_t replaced_lines = 0;  // lines whose invalid UTF-8 --replace-invalid repaired
};

// Reads up to `limit` lines into a chunk, each checked to be UTF-8 (or repaired with
// --replace-invalid), and encodes them. Once it has a line, it stops early when the input has
// nothing more for now (a pipe or terminal fed a line at a time): those lines are translated
// instead of waiting for more. Empty when the input has ended (or a wait was stopped: a signal)
// and no line was read.
std::optional<Chunk> read_chunk(LineReader& reader, std::int64_t limit, const TranslateCliOptions& o,
                                const Translator& translator) {
  std::vector<std::string> lines;
  Chunk chunk;
  std::string line;
  while (static_cast<std::int64_t>(lines.size()) < limit && (lines.empty() || reader.ready()) && reader.next(line)) {
    const std::size_t bad = utf8::find_invalid(line);
    if (bad != std::string::npos) {
      if (!o.replace_invalid) {
        throw_input_error(reader.name(), static_cast<std::size_t>(reader.line_number()),
                          "invalid UTF-8 at byte " + std::to_string(bad + 1) +
                              " of the line (expected UTF-8 text; --replace-invalid replaces bad bytes with U+FFFD)");
      }
      line = utf8::replace_invalid(line);
      ++chunk.replaced_lines;
    }
    lines.push_back(std::move(line));
  }
  if (lines.empty()) return std::nullopt;
  chunk.sources = translator.encode(lines);
  if (needs_source_words(o)) {
    for (const std::string& l : lines) chunk.words.push_back(source_words(l, translator.vocabulary()));
  }
  return chunk;
}

// Chunks on standard output start at one batch's worth of lines and double up to --chunk-lines,
// so the first translations appear after one batch rather than after 10,000 lines; into a file
// (written at the end anyway) every chunk is --chunk-lines long, for the best length sorting.
std::int64_t next_chunk_size(std::int64_t previous, const TranslateCliOptions& o) {
  if (o.output != "-") return o.chunk_lines;
  const std::int64_t first = o.decoding.batch_sentences > 0 ? o.decoding.batch_sentences : kCpuBatchSentences;
  return previous == 0 ? std::min(first, o.chunk_lines) : std::min(previous * 2, o.chunk_lines);
}

// Reads and encodes the input one chunk ahead of the translation, on a thread of its own: the text
// work (reading, UTF-8 checks, SentencePiece) of the next chunk overlaps the decoding of this one,
// which on a GPU would otherwise idle the device. A reader's error (a bad line) is rethrown by the
// next() that would have returned its chunk, so the lines before it are translated and written
// first, as without the thread.
class ChunkPrefetcher {
 public:
  ChunkPrefetcher(LineReader& reader, const TranslateCliOptions& o, const Translator& translator)
      : reader_(reader), o_(o), translator_(translator) {
    reader_.stop_waiting_when(&abandon_);
    start();
  }
  // Stops a wait for input (a pipe with nothing to read) and waits for the thread.
  ~ChunkPrefetcher() {
    abandon_ = 1;
    if (pending_.valid()) pending_.wait();
  }
  ChunkPrefetcher(const ChunkPrefetcher&) = delete;
  ChunkPrefetcher& operator=(const ChunkPrefetcher&) = delete;

  // The next chunk, or nothing at the end of the input (or when a signal stopped a wait).
  std::optional<Chunk> next() {
    std::optional<Chunk> chunk = pending_.get();
    if (chunk) start();
    return chunk;
  }

 private:
  void start() {
    limit_ = next_chunk_size(limit_, o_);
    pending_ =
        std::async(std::launch::async, [this, limit = limit_] { return read_chunk(reader_, limit, o_, translator_); });
  }

  LineReader& reader_;
  const TranslateCliOptions& o_;
  const Translator& translator_;
  std::atomic<int> abandon_{0};
  std::int64_t limit_ = 0;
  std::future<std::optional<Chunk>> pending_;
};

// Writes a chunk's translations in input order as they become ready: after each batch, the lines
// from the first unwritten one up to the first one not translated yet.
class ChunkWriter {
 public:
  // `picture_caption`: what the attention pictures show (layer and head), after "line N: ".
  ChunkWriter(Output& output, const TranslateCliOptions& o, const Vocabulary& vocabulary, const std::string& input_name,
              std::int64_t max_positions, std::string picture_caption, Totals& totals)
      : output_(output),
        o_(o),
        out_(output_options(o)),
        vocabulary_(vocabulary),
        input_name_(input_name),
        max_positions_(max_positions),
        picture_caption_(std::move(picture_caption)),
        totals_(totals) {}

  void write_ready(const std::vector<Translation>& results) {
    std::string text;
    for (; next_ < results.size() && !results[next_].nbest.empty(); ++next_) {
      const Translation& t = results[next_];
      const std::int64_t index = totals_.lines;
      if (t.truncated && ++totals_.truncated <= 10) {
        spdlog::warn("translate: {}:{}: longer than the model's {} positions: cut to its first {} tokens", input_name_,
                     index + 1, max_positions_, t.source_tokens);
      }
      totals_.source_tokens += t.source_tokens;
      totals_.target_tokens += static_cast<std::int64_t>(t.nbest.front().tokens.size());
      const SourceWords* source = words_ != nullptr ? &(*words_)[next_] : nullptr;
      if (out_.format == OutputFormat::kJson) {
        text += translation_json(t, out_, vocabulary_, source)
                    .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
                "\n";
      } else {
        text += format_text(t, index, out_, vocabulary_, source);
      }
      if (!o_.attention_dir.empty()) write_picture(t.nbest.front(), index, *source);
      ++totals_.lines;
    }
    if (!text.empty()) output_.write(text);
  }
  // A new chunk, with its lines' words when the output needs them.
  void start_chunk(const std::vector<SourceWords>* words) {
    next_ = 0;
    words_ = words;
  }

 private:
  // DIR/N.svg for input line N (1-based, 6 digits at least), when it had something to translate.
  void write_picture(const TranslatedHypothesis& h, std::int64_t index, const SourceWords& source) const {
    if (h.attention.empty()) return;
    const WordLevel w = word_level(h, vocabulary_, &source);
    char name[32];
    std::snprintf(name, sizeof name, "%06lld.svg", static_cast<long long>(index + 1));
    write_file_atomically(o_.attention_dir + "/" + name,
                          attention_svg(source.words, w.words, w.attention,
                                        "line " + std::to_string(index + 1) + ": " + picture_caption_));
  }

  Output& output_;
  const TranslateCliOptions& o_;
  const OutputOptions out_;
  const Vocabulary& vocabulary_;
  const std::string& input_name_;
  std::int64_t max_positions_;
  std::string picture_caption_;
  Totals& totals_;
  std::size_t next_ = 0;  // the first line of the chunk not written yet
  const std::vector<SourceWords>* words_ = nullptr;
};

void log_summary(const Totals& totals, double seconds, std::int64_t max_positions, Device device) {
  seconds = std::max(seconds, 1e-9);
  spdlog::info(
      "translate: {} lines, {} source tokens, {} target tokens (1-best) in {:.2f} s: {:.1f} lines/s, {:.0f} "
      "source tokens/s, {:.0f} target tokens/s",
      totals.lines, totals.source_tokens, totals.target_tokens, seconds, static_cast<double>(totals.lines) / seconds,
      static_cast<double>(totals.source_tokens) / seconds, static_cast<double>(totals.target_tokens) / seconds);
  const AllocatorStats memory = allocator_for(device).stats();
  spdlog::debug("translate: {} allocator: peak in use {} MiB, peak reserved {} MiB, {} system allocations, {} frees",
                device.str(), memory.peak_in_use >> 20, memory.peak_reserved >> 20, memory.system_allocations,
                memory.system_frees);
  if (totals.truncated > 0) {
    spdlog::warn("translate: {} line(s) longer than {} tokens were truncated", totals.truncated, max_positions);
  }
  if (totals.replaced_lines > 0) {
    spdlog::warn("translate: {} line(s) had invalid UTF-8, replaced with U+FFFD", totals.replaced_lines);
  }
}

void check_options(const TranslateCliOptions& o) {
  const Device device = Device::parse(o.decoding.device);
  if (o.deterministic && !device.is_cpu()) {
    throw CLI::ValidationError(
        "--deterministic is for the CPU (on a GPU, cuBLASLt may choose another algorithm for another batch size)");
  }
  check_decoding_device("translate", o.decoding.device, o.decoding.precision);
  if (o.nbest > o.decoding.beam) {
    throw CLI::ValidationError("--nbest " + std::to_string(o.nbest) + " is larger than --beam " +
                               std::to_string(o.decoding.beam));
  }
  if (o.nbest > 0 && o.scores) throw CLI::ValidationError("--scores is for 1-best output; n-best lines have scores");
  if (o.output_format == "json" && o.scores) {
    throw CLI::ValidationError("--scores is for text output; each JSON object has its scores");
  }
  if ((o.attention_layer > 0 || o.attention_head > 0) && !needs_source_words(o)) {
    throw CLI::ValidationError(
        "--attention-layer and --attention-head choose the attention of --alignment and "
        "--attention-dir: give one of those");
  }
}

// "decoder layer 6 of 6, the average of 8 heads" (and of an ensemble's models), checked against
// every model.
std::string attention_caption(const DecodingModels& models, const AttentionChoice& choice) {
  std::string caption;
  for (const auto& model : models.models) {
    const ModelConfig& c = model->config();
    const std::int64_t layer = attention_layer(choice, c.decoder_layers, c.heads);
    if (caption.empty()) {
      caption = "decoder layer " + std::to_string(layer + 1) + " of " + std::to_string(c.decoder_layers) + ", " +
                (choice.head >= 0 ? "head " + std::to_string(choice.head + 1)
                                  : "the average of " + std::to_string(c.heads) + " heads");
    }
  }
  if (models.models.size() > 1) caption += ", the average of " + std::to_string(models.models.size()) + " models";
  return caption;
}

int run_translate(const TranslateCliOptions& o) {
  check_options(o);
  set_compute_threads(resolve_threads(o.decoding.threads, "translate: --threads"));
  ops::set_row_invariant_products(o.deterministic);
  // The input and the output are opened before the model is loaded, so that a missing input or an
  // output that cannot be written is reported at once. Signals are caught from here on: a signal
  // while the model loads stops translate before its first chunk, the temporary output removed.
  StopSignals signals;
  LineReader reader(o.input);
  reader.stop_waiting_when(signals.flag());
  Output output(o.output);
  signals.remove_on_abort(output.temporary_path());

  const Device device = Device::parse(o.decoding.device);
  const DecodingModels models = load_decoding_models(o.models, o.decoding.precision, device);
  const Vocabulary& vocabulary = *models.vocabulary;
  DecodingOptions effective = o.decoding;  // the first model's recommended settings for those not given
  if (apply_model_defaults(decoding_defaults(models.infos.front(), o.models.front()), effective)) {
    spdlog::info("translate: search settings not given on the command line are the model file's (docs/MODELS.md)");
  }
  TranslatorOptions options = effective.translator_options(device, DecodingUse::kBatch);
  options.search = search_options(effective, o);
  const Translator translator(models.decoding(), vocabulary, options);
  const std::int64_t max_positions = models.decoding().config().max_positions;
  std::string caption;  // what the attention pictures show
  if (options.search.record_attention) caption = attention_caption(models, options.search.attention);
  if (!o.attention_dir.empty()) std::filesystem::create_directories(o.attention_dir);
  for (std::size_t i = 0; i < o.models.size(); ++i) {
    spdlog::info("translate: {} (step {}){}", o.models[i], models.infos[i].step,
                 o.models.size() > 1 ? fmt::format(", ensemble member {} of {}", i + 1, o.models.size()) : "");
  }
  spdlog::info("translate: beam {}, {} length normalisation alpha {}, output at most {} x source + {} tokens, {}",
               effective.beam, effective.length_normalization, effective.length_penalty, effective.max_length_a,
               effective.max_length_b,
               device.is_cpu() ? fmt::format("{} thread(s)", compute_threads())
                               : fmt::format("on {} in {}", device.str(), effective.precision));

  const bool show_progress = o.progress || ::isatty(STDERR_FILENO) != 0;
  Progress progress(show_progress, show_progress ? count_lines(o.input) : -1);
  const Clock::time_point start = Clock::now();
  Totals totals;
  ChunkWriter writer(output, o, vocabulary, reader.name(), max_positions, caption, totals);
  try {
    ChunkPrefetcher chunks(reader, o, translator);
    while (std::optional<Chunk> chunk = chunks.next()) {
      if (signals.received() != 0) throw StopRequested{};  // e.g. while the model was loading
      totals.replaced_lines += chunk->replaced_lines;
      const std::int64_t chunk_start = totals.lines;
      writer.start_chunk(needs_source_words(o) ? &chunk->words : nullptr);
      translator.translate_ids_in_batches(std::move(chunk->sources),
                                          [&](const std::vector<Translation>& results, std::int64_t done) {
                                            writer.write_ready(results);
                                            progress.update(chunk_start + done);
                                            if (signals.received() != 0) throw StopRequested{};
                                          });
    }
    if (signals.received() != 0) throw StopRequested{};  // a signal while waiting for input
  } catch (const StopRequested&) {
    progress.finish();
    spdlog::warn("translate: interrupted by signal {} after {} lines; {}", signals.received(), totals.lines,
                 o.output == "-" ? "the lines written are complete and in input order" : "no output file written");
    return 128 + signals.received();
  }
  output.commit();
  progress.finish();
  log_summary(totals, seconds_since(start), max_positions, device);
  return 0;
}

}  // namespace

Subcommand add_translate(CLI::App& app) {
  auto o = std::make_shared<TranslateCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "translate",
      "Translate text, one sentence per line, with beam search (the paper: beam 4, GNMT length penalty 0.6, at most "
      "source length + 50 tokens); output in input order, one line per input line");
  sub->add_option("--model,-m", o->models,
                  "Model file (from train or average-checkpoints; holds the vocabulary); give it more than once "
                  "(-m a -m b) for an ensemble, which averages the models' log-probabilities")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--input,-i", o->input, "Input text, one sentence per line ('-': standard input)")
      ->capture_default_str();
  sub->add_option("--output,-o", o->output, "Output file, written atomically ('-': standard output)")
      ->capture_default_str();
  add_decoding_options(sub, o->decoding, kSearchOptions | kWordRewardOption);
  sub->add_option("--nbest,-n", o->nbest,
                  "Write the K best hypotheses of each line as 'I ||| TEXT ||| F0= LOG_PROB ||| SCORE' (K <= beam)")
      ->check(integer_in(1, kMaxBeam));
  sub->add_flag("--scores", o->scores, "Write 'score<TAB>text' for the 1-best output");
  sub->add_option("--output-format", o->output_format,
                  "text, or json: one JSON object per input line (translation, log_prob, score, and the n-best "
                  "list, word scores and alignment when asked; docs/DECODING.md)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub->add_flag("--word-scores", o->word_scores,
                "Each output word's log-probability (the sum of its pieces'); in text appended as "
                "' ||| WordScores= ...'");
  CLI::Option* alignment =
      sub->add_option(
             "--alignment", o->alignment,
             "Word alignment from the decoder's cross-attention: hard (the default when given without a value: "
             "each target word's most attended source word, Pharaoh 'S-T' pairs) or soft (each target word's "
             "weights over the source words)")
          ->expected(0, 1)
          ->check(CLI::IsMember({"", "hard", "soft"}));
  sub->add_option("--attention-layer", o->attention_layer,
                  "The decoder layer whose cross-attention alignments and pictures read (1-based; default: the last)")
      ->check(integer_in(1, 1024));
  sub->add_option("--attention-head", o->attention_head,
                  "The head whose attention alignments and pictures read (1-based; default: the average of all)")
      ->check(integer_in(1, 1024));
  sub->add_option("--attention-dir", o->attention_dir,
                  "Write one SVG picture of each sentence's attention (source words across, target words down) "
                  "into this directory, as NNNNNN.svg for input line NNNNNN");
  add_decoding_options(sub, o->decoding, kBatchOptions);
  sub->add_option("--chunk-lines", o->chunk_lines, "Lines read, sorted by length and translated at a time")
      ->check(integer_in(1, std::int64_t{1} << 30))
      ->capture_default_str();
  add_decoding_options(sub, o->decoding, kDeviceOptions);
  sub->add_flag("--replace-invalid", o->replace_invalid,
                "Replace invalid UTF-8 with U+FFFD (counted) instead of stopping with an error");
  sub->add_flag("--deterministic", o->deterministic,
                "Batch-invariant output on every CPU: a line's translation and scores do not depend on the lines "
                "it is batched with (f32 products in fixed 16-row blocks; docs/DECODING.md says what it costs)");
  sub->add_flag("--progress", o->progress, "Report progress on standard error (always on when it is a terminal)");
  return {sub, [o, alignment, sub] {
            if (alignment->count() > 0 && o->alignment.empty()) o->alignment = "hard";  // given without a value
            o->decoding.given = given_search_options(*sub);
            return run_translate(*o);
          }};
}

}  // namespace dragoman::cli
