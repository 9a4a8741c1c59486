// score-bleu's inputs: hypotheses and references as the command reads them (UTF-8 lines, equal
// counts), through every metric and tokenizer: BLEU with 13a, intl, zh, char and none (cased and
// lowercased, corpus and sentence level), chrF and chrF++, and the paper's tokenized BLEU (the
// Moses tokenizer for en, de, fr and a language without prefixes; compound splitting and
// aggressive dashes). Input: hypotheses, a NUL, references. Checks besides the error contract:
// every score is a number between 0 and 100.
// Seeds: fuzz/seeds/fuzz_score_bleu (tests/fixtures/bleu's pairs).
#include <cmath>
#include <memory>

#include "base/error.h"
#include "eval/bleu.h"
#include "eval/chrf.h"
#include "eval/corpus_score.h"
#include "eval/paper_bleu.h"
#include "eval/tokenizers.h"
#include "fuzz_common.h"
#include "io/text_lines.h"

using namespace dragoman;

namespace {

void check(const eval::Metric& metric, const eval::Corpus& corpus) {
  const eval::MetricResult r = eval::corpus_score(metric, corpus, 1);
  if (!std::isfinite(r.score) || r.score < 0 || r.score > 100 + 1e-9)
    fuzz::fail(r.name + " score " + std::to_string(r.score));
}

std::vector<std::unique_ptr<eval::Metric>> make_metrics() {
  std::vector<std::unique_ptr<eval::Metric>> metrics;
  for (const char* tokenizer : {"13a", "intl", "zh", "char", "none"}) {
    for (const bool lowercase : {false, true}) {
      eval::BleuOptions o;
      o.tokenizer = eval::parse_tokenizer(tokenizer);
      o.lowercase = lowercase;
      metrics.push_back(std::make_unique<eval::Bleu>(o));
    }
  }
  for (const int word_order : {0, 2}) {
    eval::ChrfOptions o;
    o.word_order = word_order;
    metrics.push_back(std::make_unique<eval::Chrf>(o));
  }
  for (const char* lang : {"en", "de", "fr", "xx"}) {
    eval::PaperBleuOptions o;
    o.lang = lang;
    o.split_compounds = std::string(lang) == "de";
    o.aggressive_dash_splits = std::string(lang) == "fr";
    metrics.push_back(std::make_unique<eval::PaperBleu>(o));
  }
  return metrics;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::quiet();
  static const std::vector<std::unique_ptr<eval::Metric>> metrics = make_metrics();
  static const eval::Bleu sentence_bleu = [] {
    eval::BleuOptions o;
    o.effective_order = true;  // as --sentence-level sets it
    return eval::Bleu(o);
  }();
  const std::vector<std::string> parts = fuzz::split_parts(fuzz::as_text(data, size), 2);
  try {
    const io::TextLines hyps = io::text_lines_from_bytes("hyp.txt", parts[0]);
    const io::TextLines refs = io::text_lines_from_bytes("ref.txt", parts[1]);
    // The command refuses different line counts; the shorter count keeps the input useful here.
    const std::size_t n = std::min(hyps.lines.size(), refs.lines.size());
    eval::Corpus corpus;
    corpus.hyps.assign(hyps.lines.begin(), hyps.lines.begin() + static_cast<std::ptrdiff_t>(n));
    corpus.refs.emplace_back(refs.lines.begin(), refs.lines.begin() + static_cast<std::ptrdiff_t>(n));
    for (const auto& metric : metrics) check(*metric, corpus);
    const std::vector<std::int64_t> stats = eval::segment_statistics(sentence_bleu, corpus, 1);
    for (std::size_t i = 0; i < n; ++i) {
      const double score = sentence_bleu.result(stats.data() + i * sentence_bleu.stats_size(), 1).score;
      if (!std::isfinite(score) || score < 0 || score > 100 + 1e-9)
        fuzz::fail("sentence BLEU " + std::to_string(score));
    }
  } catch (const Error&) {
  }
  return 0;
}
