// `dragoman score-bleu`: sacreBLEU 2.x BLEU and chrF on files (options -> eval library calls).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/validators.h"
#include "eval/bleu.h"
#include "eval/chrf.h"
#include "eval/corpus_score.h"
#include "eval/paper_bleu.h"
#include "eval/report.h"
#include "io/text_lines.h"

namespace dragoman::cli {
namespace {

struct ScoreBleuOptions {
  std::string input = "-";
  std::vector<std::string> refs;
  std::vector<std::string> metrics{"bleu"};
  std::string tokenize = "13a";
  bool lowercase = false;
  std::string smooth_method = "exp";
  double smooth_value = 0.0;
  bool smooth_value_given = false;
  int chrf_char_order = 6;
  int chrf_word_order = 0;
  int chrf_beta = 2;
  bool chrf_whitespace = false;
  bool chrf_lowercase = false;
  bool chrf_eps_smoothing = false;
  bool sentence_level = false;
  bool score_only = false;
  int width = 2;
  bool width_given = false;
  bool json = false;
  bool short_signature = false;
  bool force = false;
  int threads = 0;
  std::string paper_lang;                // --paper LANG: also the paper's tokenized BLEU
  std::string paper_compounds = "auto";  // split, keep, or auto: split for German only
  std::string paper_punctuation = "auto";  // normalize, keep, or auto: normalize for German only
  bool paper_aggressive_dashes = false;
};

std::unique_ptr<eval::Metric> make_metric(const std::string& name, const ScoreBleuOptions& o) {
  if (name == "bleu") {
    eval::BleuOptions b;
    b.tokenizer = eval::parse_tokenizer(o.tokenize);
    b.lowercase = o.lowercase;
    b.smoothing = eval::parse_smoothing(o.smooth_method);
    if (o.smooth_value_given) b.smooth_value = o.smooth_value;
    b.effective_order = o.sentence_level;  // sacreBLEU turns it on for sentence-level BLEU
    return std::make_unique<eval::Bleu>(b);
  }
  eval::ChrfOptions c;
  c.char_order = o.chrf_char_order;
  c.word_order = o.chrf_word_order;
  c.beta = o.chrf_beta;
  c.lowercase = o.chrf_lowercase;
  c.whitespace = o.chrf_whitespace;
  c.eps_smoothing = o.chrf_eps_smoothing;
  return std::make_unique<eval::Chrf>(c);
}

void write_stdout(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    throw Error("cannot write to standard output");
  }
}

void run_score_bleu(ScoreBleuOptions o) {
  // Each metric once (sacreBLEU keys its metrics by name): "-m bleu,bleu" is one BLEU.
  std::sort(o.metrics.begin(), o.metrics.end());
  o.metrics.erase(std::unique(o.metrics.begin(), o.metrics.end()), o.metrics.end());
  if (o.sentence_level && o.metrics.size() > 1) {
    throw CLI::ValidationError("--sentence-level", "takes exactly one metric, got " + std::to_string(o.metrics.size()));
  }
  if (o.sentence_level && !o.paper_lang.empty()) {
    throw CLI::ValidationError("--paper", "is a corpus score: it does not go with --sentence-level");
  }
  if (o.input == "-" && ::isatty(STDIN_FILENO) != 0) {
    // Waiting for hypotheses typed on a terminal is never what was meant: usually a file given
    // without -i was taken for another reference.
    std::string message =
        "no hypotheses: they are read from standard input, which is a terminal; give -i FILE or "
        "pipe them in";
    if (o.refs.size() > 1) {
      message += " (--ref took " + std::to_string(o.refs.size()) + " files; if '" + o.refs.back() +
                 "' holds the hypotheses, give it with -i)";
    }
    throw CLI::ValidationError("--input", message);
  }
  const io::TextLines hyps = io::read_text_lines(o.input);
  std::vector<io::TextLines> refs;
  for (const auto& path : o.refs) refs.push_back(io::read_text_lines(path));
  if (hyps.lines.empty()) throw Error(hyps.name + " has no lines (expected one hypothesis per line)");
  eval::Corpus corpus;
  corpus.hyps = hyps.lines;
  for (const auto& ref : refs) {
    if (ref.lines.size() != hyps.lines.size()) {
      throw Error("line counts differ: " + hyps.name + " has " + std::to_string(hyps.lines.size()) + " lines, " +
                  ref.name + " has " + std::to_string(ref.lines.size()) +
                  " (expected one reference line per hypothesis line)");
    }
    corpus.refs.push_back(ref.lines);
  }

  std::vector<std::unique_ptr<eval::Metric>> metrics;
  for (const auto& name : o.metrics) metrics.push_back(make_metric(name, o));
  std::sort(metrics.begin(), metrics.end(), [](const auto& a, const auto& b) { return a->key() < b->key(); });

  const bool bleu_requested = std::find(o.metrics.begin(), o.metrics.end(), "bleu") != o.metrics.end();
  if (bleu_requested && !o.force) {
    std::size_t tokenized = 0;
    for (std::string_view line : hyps.lines) {
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
      if (line.size() >= 2 && line.substr(line.size() - 2) == " .") ++tokenized;
    }
    if (tokenized >= 100) {
      spdlog::warn(
          "{} lines end in a tokenized period (' .'): it looks like the hypotheses are not detokenized, "
          "which may hurt the score (--force silences this)",
          tokenized);
    }
  }

  const int threads = cpu::resolve_threads(o.threads, "score-bleu: --threads");
  const int width = o.width_given || !o.score_only ? o.width : 4;
  const std::size_t nrefs = corpus.refs.size();

  if (o.sentence_level) {
    const eval::Metric& metric = *metrics.front();
    const std::vector<std::int64_t> stats = eval::segment_statistics(metric, corpus, threads);
    const std::size_t k = metric.stats_size();
    std::string out;
    for (std::size_t i = 0; i < corpus.hyps.size(); ++i) {
      const eval::MetricResult r = metric.result(stats.data() + i * k, nrefs);
      if (o.json) {
        out += eval::format_json(r, width).dump() + "\n";
      } else {
        out += eval::format_text(r, width, o.score_only, o.short_signature) + "\n";
      }
    }
    write_stdout(out);
    return;
  }

  std::vector<eval::MetricResult> results;
  for (const auto& metric : metrics) results.push_back(eval::corpus_score(*metric, corpus, threads));
  std::string description;  // the paper's BLEU, last
  if (!o.paper_lang.empty()) {
    eval::PaperBleuOptions p;
    p.lang = o.paper_lang;
    p.split_compounds = o.paper_compounds == "split" || (o.paper_compounds == "auto" && p.lang == "de");
    p.aggressive_dash_splits = o.paper_aggressive_dashes;
    p.normalize_punctuation = o.paper_punctuation == "normalize" || (o.paper_punctuation == "auto" && p.lang == "de");
    if (!eval::MosesTokenizer::has_prefixes(p.lang)) {
      spdlog::warn(
          "--paper {}: the Moses tokenizer has no nonbreaking prefixes for '{}' and uses the English ones "
          "(as sacremoses does)",
          p.lang, p.lang);
    }
    const eval::PaperBleu paper(p);
    results.push_back(eval::corpus_score(paper, corpus, threads));
    description = paper.description();
  }
  if (o.json) {
    write_stdout(eval::format_results_json(results, width));
    return;
  }
  std::string text = eval::format_results_text(results, width, o.score_only, o.short_signature);
  if (!description.empty() && !o.score_only) text.insert(text.size() - 1, "  (" + description + ")");
  write_stdout(text);
}

}  // namespace

Subcommand add_score_bleu(CLI::App& app) {
  auto o = std::make_shared<ScoreBleuOptions>();
  CLI::App* sub = app.add_subcommand(
      "score-bleu",
      "BLEU and chrF exactly as sacreBLEU 2.x computes them (same inputs, same numbers, sacreBLEU's signature)");
  sub->add_option("--input,-i", o->input, "Hypotheses, one per line ('-' or absent: standard input, not a terminal)");
  sub->add_option("--ref,-r", o->refs, "Reference file(s), one segment per line; repeat for several references")
      ->required()
      ->expected(1, -1);
  sub->add_option("--metrics,-m", o->metrics, "Metrics to compute: bleu, chrf (comma-separated or repeated)")
      ->default_str("bleu")
      ->delimiter(',')
      ->check(CLI::IsMember({"bleu", "chrf"}));
  sub->add_option("--tokenize", o->tokenize, "BLEU tokenizer")
      ->check(CLI::IsMember({"13a", "intl", "zh", "char", "none"}))
      ->capture_default_str()
      ->group("BLEU");
  sub->add_flag("--lowercase", o->lowercase, "Lowercase before computing BLEU")->group("BLEU");
  sub->add_option("--smooth-method", o->smooth_method, "BLEU smoothing")
      ->check(CLI::IsMember({"exp", "floor", "add-k", "none"}))
      ->capture_default_str()
      ->group("BLEU");
  sub->add_option_function<double>(
         "--smooth-value",
         [o](double v) {
           o->smooth_value = v;
           o->smooth_value_given = true;
         },
         "Smoothing value for floor (default 0.1) and add-k (default 1)")
      ->check(number_in(0, 1e6))
      ->group("BLEU");
  sub->add_option("--chrf-char-order", o->chrf_char_order, "chrF character n-gram order")
      ->check(integer_in(0, 64))
      ->capture_default_str()
      ->group("chrF");
  sub->add_option("--chrf-word-order", o->chrf_word_order, "chrF word n-gram order (2 gives chrF++)")
      ->check(integer_in(0, 64))
      ->capture_default_str()
      ->group("chrF");
  sub->add_option("--chrf-beta", o->chrf_beta, "chrF beta (recall weight)")
      ->check(integer_in(0, 1000))
      ->capture_default_str()
      ->group("chrF");
  sub->add_flag("--chrf-whitespace", o->chrf_whitespace, "Keep whitespace in chrF character n-grams")->group("chrF");
  sub->add_flag("--chrf-lowercase", o->chrf_lowercase, "Lowercase before computing chrF")->group("chrF");
  sub->add_flag("--chrf-eps-smoothing", o->chrf_eps_smoothing, "chrF++.py epsilon smoothing")->group("chrF");
  sub->add_flag("--sentence-level", o->sentence_level, "One score per line (BLEU with effective order)")
      ->group("Output");
  sub->add_flag("--score-only,-b", o->score_only, "Print only the score (4 decimals unless --width is given)")
      ->group("Output");
  sub->add_option_function<int>(
         "--width,-w",
         [o](int w) {
           o->width = w;
           o->width_given = true;
         },
         "Decimals of the score (default 2)")
      ->check(integer_in(0, 17))
      ->group("Output");
  CLI::Option* paper =
      sub->add_option("--paper", o->paper_lang,
                      "Also the paper's tokenized BLEU, on its own line after sacreBLEU's: the Moses tokenizer for "
                      "this language (the target language: de, fr, en, ...) on hypotheses and references, for "
                      "German tensor2tensor's get_ende_bleu.sh step for step (its punctuation normalisation, the "
                      "quote-normalised reference, compound splitting a ##AT##-##AT## b), multi-bleu.perl's BLEU "
                      "(docs/WMT14.md)")
          ->check([](const std::string& lang) {
            return lang.empty() || lang.size() > 8 ||
                           lang.find_first_not_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos
                       ? std::string("expected a language code in lower case (de, fr, en, ...)")
                       : std::string();
          })
          ->group("Paper BLEU");
  sub->add_option("--paper-compounds", o->paper_compounds,
                  "With --paper: the ##AT## compound splitting of hyphenated words: auto (for German only, as "
                  "tensor2tensor's get_ende_bleu.sh and the papers that followed), split, or keep")
      ->check(CLI::IsMember({"auto", "split", "keep"}))
      ->capture_default_str()
      ->needs(paper)
      ->group("Paper BLEU");
  sub->add_option("--paper-punctuation", o->paper_punctuation,
                  "With --paper: get_ende_bleu.sh's normalisation before the tokenizer (Moses' "
                  "replace-unicode-punctuation.perl, and „ as \" as in the paper's reference, on both sides): auto "
                  "(for German only), normalize, or keep")
      ->check(CLI::IsMember({"auto", "normalize", "keep"}))
      ->capture_default_str()
      ->needs(paper)
      ->group("Paper BLEU");
  sub->add_flag("--paper-aggressive-dashes", o->paper_aggressive_dashes,
                "With --paper: Moses' -a (a @-@ b) before the compound splitting")
      ->needs(paper)
      ->group("Paper BLEU");
  sub->add_flag("--json", o->json, "JSON output (sacreBLEU's -f json, plus full-precision statistics)")
      ->group("Output");
  sub->add_flag("--short", o->short_signature, "Short signature (sacreBLEU's --short)")->group("Output");
  sub->add_flag("--force", o->force, "Do not warn about hypotheses that look tokenized")->group("Output");
  add_threads_option(sub, o->threads, "Threads");
  return {sub, [o] {
            run_score_bleu(*o);
            return 0;
          }};
}

}  // namespace dragoman::cli
