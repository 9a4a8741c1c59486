// `dragoman translate`: translates text one sentence per line with a model file's embedded
// vocabulary and beam search: options -> the models (decode/model_files.h), a Translator
// (decode/translator.h) and translate's pipeline (decode/translation_stream.h: input in chunks,
// encoded one ahead, lines written in input order after each batch). Output to a file is atomic:
// it appears, complete, when the translation ends; an error or a SIGINT/SIGTERM (exit 128 +
// signal) leaves no partial file. On standard output a signal keeps the lines already written,
// all complete and in input order.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "base/timing.h"
#include "cli/commands.h"
#include "cli/decoding_options.h"
#include "cli/stop_signal.h"
#include "cli/validators.h"
#include "decode/model_files.h"
#include "decode/translation_stream.h"
#include "device/cpu/threads.h"
#include "device/device.h"
#include "io/line_reader.h"
#include "io/status_line.h"
#include "ops/linear.h"

namespace dragoman::cli {
namespace {

struct TranslateCliOptions {
  std::vector<std::string> models;  // one, or an ensemble
  std::string input = "-";
  std::string output = "-";
  decode::DecodingOptions decoding;  // the search, device, batches
  int nbest = 0;
  bool scores = false;
  std::string output_format = "text";
  bool word_scores = false;
  std::string alignment;    // "", "hard" or "soft"
  int attention_layer = 0;  // 1-based; 0: the last
  int attention_head = 0;   // 1-based; 0: the average of the heads
  std::string attention_dir;
  std::string target_prefix;    // a file: each input line's output prefix
  std::string constraints;      // a file: each input line's required phrases, tab-separated
  std::string shortlist;        // a file: the vocabulary shortlist (decode/shortlist.h)
  decode::ChunkOptions chunks;  // --chunk-lines, --replace-invalid (the first chunk's size: run_translate)
  bool noise = false;           // Edunov et al.'s noise on each translation (decode/output_noise.h)
  bool deterministic = false;
  bool progress = false;     // log lines of progress off a terminal too
  bool no_progress = false;  // no status line on a terminal
};

// An n-best list is at most the beam's hypotheses: "--nbest 8 is larger than the beam, 4 (give --beam 8
// or more for 8 hypotheses)".
void check_nbest(int nbest, int beam) {
  if (nbest <= beam) return;
  throw CLI::ValidationError("--nbest " + std::to_string(nbest) + " is larger than the beam, " + std::to_string(beam) +
                             " (a beam search keeps beam hypotheses: give --beam " + std::to_string(nbest) +
                             " or more for " + std::to_string(nbest) + " of them)");
}

// `decoding`'s search, with the n-best list and the attention the output needs.
decode::SearchOptions search_options(const decode::DecodingOptions& decoding, const TranslateCliOptions& o) {
  decode::SearchOptions s = decoding.search_options();
  s.nbest = std::max(o.nbest, 1);
  s.record_attention = !o.alignment.empty() || !o.attention_dir.empty();
  s.attention.layer = o.attention_layer - 1;
  s.attention.head = o.attention_head - 1;
  return s;
}

decode::OutputOptions output_options(const TranslateCliOptions& o) {
  decode::OutputOptions out;
  out.format = o.output_format == "json" ? decode::OutputFormat::kJson : decode::OutputFormat::kText;
  out.nbest = o.nbest;
  out.scores = o.scores;
  out.word_scores = o.word_scores;
  out.alignment = o.alignment == "hard"   ? decode::AlignmentKind::kHard
                  : o.alignment == "soft" ? decode::AlignmentKind::kSoft
                                          : decode::AlignmentKind::kNone;
  return out;
}

// Whether the output needs each input line's words (alignments, pictures).
bool needs_source_words(const TranslateCliOptions& o) { return !o.alignment.empty() || !o.attention_dir.empty(); }

void check_options(const TranslateCliOptions& o) {
  const Device device = Device::parse(o.decoding.device);
  if (o.deterministic && !device.is_cpu()) {
    throw CLI::ValidationError(
        "--deterministic is for the CPU (on a GPU, cuBLASLt may choose another algorithm for another batch size)");
  }
  check_decoding_device("translate", o.decoding.device, o.decoding.precision);
  // (Without --beam the model file may recommend a beam: checked once it is known.)
  const decode::SamplingOptions& sampling = o.decoding.sampling;
  if (!sampling.enabled && (sampling.temperature != 1.0 || sampling.top_k != 0 || sampling.top_p != 1.0 ||
                            (sampling.seed != 1 && !o.noise))) {
    throw CLI::ValidationError("--temperature, --top-k, --top-p and --seed shape --sampling: give --sampling too");
  }
  if (o.noise && (o.output_format != "text" || o.scores || o.nbest > 0 || o.word_scores || needs_source_words(o))) {
    throw CLI::ValidationError(
        "--noise changes the text only: not with --nbest, --scores, --word-scores, --alignment, --attention-dir or "
        "JSON output (their tokens and scores would be the translation's before the noise)");
  }
  if (o.decoding.sampling.enabled && o.decoding.given.beam) {
    throw CLI::ValidationError("--beam is for the beam search; with --sampling, --nbest N gives N samples a line");
  }
  if (o.decoding.sampling.enabled && !o.constraints.empty()) {
    throw CLI::ValidationError(
        "--constraints need the beam search: not with --sampling (--target-prefix works with both)");
  }
  if (o.decoding.given.beam) check_nbest(o.nbest, o.decoding.beam);
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

int run_translate(const TranslateCliOptions& o) {
  check_options(o);
  cpu::set_compute_threads(cpu::resolve_threads(o.decoding.threads, "translate: --threads"));
  // Samples are a function of the seed and the line: on the CPU the log-probabilities they are drawn
  // from must not depend on the batch (translate --deterministic).
  const bool sampling_on_cpu = o.decoding.sampling.enabled && Device::parse(o.decoding.device).is_cpu();
  ops::set_row_invariant_products(o.deterministic || sampling_on_cpu);
  // The input and the output are opened before the model is loaded, so that a missing input or an
  // output that cannot be written is reported at once. Signals are caught from here on: a signal
  // while the model loads stops translate before its first chunk, the temporary output removed.
  StopSignals signals;
  io::LineReader reader(o.input);
  reader.stop_waiting_when(signals.flag());
  std::optional<io::LineReader> prefixes, constraints;  // files, one line per input line
  if (!o.target_prefix.empty()) prefixes.emplace(o.target_prefix);
  if (!o.constraints.empty()) constraints.emplace(o.constraints);
  decode::TranslationSink output(o.output);
  signals.remove_on_abort(output.temporary_path());

  const Device device = Device::parse(o.decoding.device);
  const decode::DecodingModels models =
      decode::load_decoding_models(o.models, o.decoding.precision, device, o.shortlist);
  decode::DecodingOptions effective = o.decoding;  // the first model's recommended settings for those not given
  const decode::SearchOrigins origins =
      apply_model_defaults(decode::decoding_defaults(models.infos.front(), o.models.front()), effective);
  if (effective.sampling.enabled) effective.beam = std::max(o.nbest, 1);  // the samples a line
  check_nbest(o.nbest, effective.beam);
  decode::TranslatorOptions options = effective.translator_options(device, decode::DecodingUse::kBatch);
  options.search = search_options(effective, o);
  options.search.shortlist = models.shortlist.get();
  if (models.shortlist && o.deterministic) {
    spdlog::warn(
        "translate: with --shortlist a line's output pieces are its batch's: the output depends on the lines "
        "batched with it, --deterministic or not (docs/DECODING.md, \"Vocabulary shortlists\")");
  }
  options.noise.enabled = o.noise;
  options.noise.seed = o.decoding.sampling.seed;
  const decode::Translator translator(models.decoding(), *models.vocabulary, options);
  const std::int64_t max_positions = models.decoding().config().max_positions;
  std::string caption;  // what the attention pictures show
  if (options.search.record_attention) caption = attention_caption(models, options.search.attention);
  if (!o.attention_dir.empty()) std::filesystem::create_directories(o.attention_dir);
  for (std::size_t i = 0; i < o.models.size(); ++i) {
    spdlog::info("translate: {} (step {}){}", o.models[i], models.infos[i].step,
                 o.models.size() > 1 ? fmt::format(", ensemble member {} of {}", i + 1, o.models.size()) : "");
  }
  const decode::SamplingOptions& sampling = effective.sampling;
  spdlog::info("translate: {}, {} length normalisation alpha {}, output at most {} x source + {} tokens, {} ({})",
               sampling.enabled
                   ? fmt::format("sampling {} a line (temperature {}, top-k {}, top-p {}, seed {})", effective.beam,
                                 sampling.temperature, sampling.top_k, sampling.top_p, sampling.seed)
                   : fmt::format("beam {}", effective.beam),
               effective.length_normalization, effective.length_penalty, effective.max_length_a, effective.max_length_b,
               device.is_cpu() ? fmt::format("{} thread(s)", cpu::compute_threads())
                               : fmt::format("on {} in {}", device.str(), effective.precision),
               describe_origins(origins));

  decode::ChunkOptions chunks = o.chunks;
  // On standard output the first chunk is one batch (--batch-sentences, else the CPU's default
  // batch, on a GPU too: the first lines soon), each next one twice the last; into a file (written
  // at the end anyway) every chunk is --chunk-lines long, for the best length sorting.
  if (o.output == "-") {
    chunks.first_chunk_lines = o.decoding.batch_sentences > 0 ? o.decoding.batch_sentences : decode::kCpuBatchSentences;
  }
  io::Progress::Options shown;
  // (translations written to the same terminal would land on the status line's row)
  shown.on_terminal = !o.no_progress && !(o.output == "-" && ::isatty(STDOUT_FILENO) != 0);
  shown.log_lines = o.progress;
  const bool counted = o.progress || (shown.on_terminal && io::StatusLine::on_terminal());
  io::Progress progress("translate", "lines", counted ? io::count_lines(o.input) : -1, shown);
  const Clock::time_point start = Clock::now();
  decode::TranslationWriter writer(output, output_options(o), *models.vocabulary, reader.name(), max_positions,
                                   o.attention_dir, caption);
  decode::GuideReader guides(*models.vocabulary, prefixes ? &*prefixes : nullptr,
                             constraints ? &*constraints : nullptr);
  if (translate_stream(translator, reader, chunks, needs_source_words(o), writer, progress, signals.flag(),
                       guides.active() ? &guides : nullptr) == decode::StreamEnd::kStopped) {
    spdlog::warn("translate: interrupted by signal {} after {} lines; {}", signals.received(), writer.totals().lines,
                 o.output == "-" ? "the lines written are complete and in input order" : "no output file written");
    return 128 + signals.received();
  }
  output.commit();
  log_translation_summary(writer.totals(), seconds_since(start), max_positions, device);
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
      ->allow_extra_args(false)  // one file a flag: `-m model small.en` does not take small.en as a model
      ->check(CLI::ExistingFile);
  sub->add_option("--input,-i", o->input, "Input text, one sentence per line ('-': standard input)")
      ->capture_default_str();
  sub->add_option("--output,-o", o->output, "Output file, written atomically ('-': standard output)")
      ->capture_default_str();
  add_decoding_options(sub, o->decoding, kSearchOptions | kWordRewardOption);
  sub->add_option("--nbest,-n", o->nbest,
                  "Write the K best hypotheses of each line as 'I ||| TEXT ||| F0= LOG_PROB ||| SCORE' (K <= beam)")
      ->check(integer_in(1, decode::kMaxBeam));
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
                  "into this directory, as NNNNNN.svg for sentence NNNNNN (from 0, as n-best ids; input line NNNNNN + 1)");
  // Sampling (decode/sampling.h): fairseq's --sampling, --sampling-topk, --sampling-topp, --temperature.
  sub->add_flag("--sampling", o->decoding.sampling.enabled,
                "Sample each output from the model's distribution instead of the beam search (back-translation); "
                "--nbest N: N samples a line, best first. Reproducible: a function of --seed and the line")
      ->group("Sampling");
  sub->add_option("--temperature", o->decoding.sampling.temperature,
                  "With --sampling: the log-probabilities divided by T before the softmax (< 1: sharper, > 1: flatter)")
      ->check(number_in(0.01, 100))
      ->capture_default_str()
      ->group("Sampling");
  sub->add_option("--top-k", o->decoding.sampling.top_k,
                  "With --sampling: only the K most probable tokens at each step (0: all)")
      ->check(integer_in(0, 1 << 24))
      ->capture_default_str()
      ->group("Sampling");
  sub->add_option(
         "--top-p", o->decoding.sampling.top_p,
         "With --sampling: only the most probable tokens whose probabilities sum to P (nucleus sampling; 1: all)")
      ->check(number_in(0.000001, 1))
      ->capture_default_str()
      ->group("Sampling");
  sub->add_flag("--noise", o->noise,
                "Noise on each translation, for back-translation (Edunov et al. 2018's beam + noise): words moved "
                "fewer than 3 places, each deleted with probability 0.1, each replaced by <BLANK> with probability 0.1")
      ->group("Sampling");
  sub->add_option("--seed", o->decoding.sampling.seed, "With --sampling or --noise: the random seed")
      ->capture_default_str()
      ->group("Sampling");
  // Guided output (decode/guide_input.h): CTranslate2's target_prefix, fairseq's and Sockeye's
  // lexical constraints (one line per input line, here in files of their own).
  sub->add_option("--target-prefix", o->target_prefix,
                  "A file with one line per input line: the text that line's translation starts with (empty: none)")
      ->check(CLI::ExistingFile)
      ->group("Guided output");
  sub->add_option("--constraints", o->constraints,
                  "A file with one line per input line: phrases that line's translation must contain, separated by "
                  "tabs (empty: none)")
      ->check(CLI::ExistingFile)
      ->group("Guided output");
  sub->add_option("--shortlist", o->shortlist,
                  "A vocabulary shortlist (dragoman build-shortlist): each batch's output layer over its sources' "
                  "lists of target pieces alone")
      ->check(CLI::ExistingFile);
  add_decoding_options(sub, o->decoding, kBatchOptions);
  sub->add_option("--chunk-lines", o->chunks.chunk_lines, "Lines read, sorted by length and translated at a time")
      ->check(integer_in(1, std::int64_t{1} << 30))
      ->capture_default_str();
  add_decoding_options(sub, o->decoding, kDeviceOptions);
  sub->add_flag("--replace-invalid", o->chunks.replace_invalid,
                "Replace invalid UTF-8 with U+FFFD (counted) instead of stopping with an error");
  sub->add_flag("--deterministic", o->deterministic,
                "Batch-invariant output on every CPU: a line's translation and scores do not depend on the lines "
                "it is batched with (f32 products in fixed 16-row blocks; docs/DECODING.md says what it costs)");
  sub->add_flag("--progress", o->progress,
                "Report progress on standard error off a terminal too (a log line every 10 s); on a terminal a "
                "status line shows it anyway (lines done, lines/s, ETA), unless the translations go to it too");
  sub->add_flag("--no-progress", o->no_progress, "No status line of progress on a terminal")->excludes("--progress");
  return {sub, [o, alignment, sub] {
            if (alignment->count() > 0 && o->alignment.empty()) o->alignment = "hard";  // given without a value
            o->decoding.given = given_search_options(*sub);
            return run_translate(*o);
          }};
}

}  // namespace dragoman::cli
