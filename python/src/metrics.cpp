// dragoman.corpus_bleu, corpus_chrf and paper_bleu: score-bleu's metrics (eval/), sacreBLEU's
// numbers and signatures, on Python lists.
#include "metrics.h"

#include <pybind11/stl.h>

#include <string_view>

#include "base/error.h"
#include "device/cpu/threads.h"
#include "eval/bleu.h"
#include "eval/chrf.h"
#include "eval/corpus_score.h"
#include "eval/paper_bleu.h"
#include "eval/report.h"
#include "eval/tokenizers.h"

namespace py = pybind11;

namespace dragoman::python {
namespace {

// sacreBLEU's result object's fields: score, name, signature, and the metric's statistics (the
// JSON of `score-bleu --json`, at full precision).
py::dict result_dict(const eval::MetricResult& r) {
  py::dict out;
  out["name"] = r.name;
  out["score"] = r.score;
  out["signature"] = r.signature;
  out["verbose"] = r.verbose;
  out["details"] = py::module_::import("json").attr("loads")(r.details.dump());
  return out;
}

py::dict score(const eval::Metric& metric, const std::vector<std::string>& hypotheses,
               const std::vector<std::vector<std::string>>& references, int threads) {
  if (hypotheses.empty()) throw py::value_error("no hypotheses (expected one a segment)");
  if (references.empty()) throw py::value_error("no references (expected a list of reference streams)");
  eval::Corpus corpus;
  corpus.hyps.assign(hypotheses.begin(), hypotheses.end());
  for (std::size_t r = 0; r < references.size(); ++r) {
    if (references[r].size() != hypotheses.size()) {
      throw py::value_error("references[" + std::to_string(r) + "] has " + std::to_string(references[r].size()) +
                            " lines for " + std::to_string(hypotheses.size()) +
                            " hypotheses (each stream: one reference a hypothesis)");
    }
    corpus.refs.emplace_back(references[r].begin(), references[r].end());
  }
  if (threads < 0 || threads > cpu::kMaxThreads) {
    throw py::value_error("threads must be an int in [0, " + std::to_string(cpu::kMaxThreads) + "] (0: all cores)");
  }
  const int n = cpu::resolve_threads(threads, "dragoman: threads");
  eval::MetricResult result;
  {
    py::gil_scoped_release released;
    result = eval::corpus_score(metric, corpus, n);
  }
  return result_dict(result);
}

}  // namespace

py::dict corpus_bleu(const std::vector<std::string>& hypotheses,
                     const std::vector<std::vector<std::string>>& references, const std::string& tokenize,
                     bool lowercase, const std::string& smooth_method, std::optional<double> smooth_value,
                     int threads) {
  eval::BleuOptions b;
  b.tokenizer = eval::parse_tokenizer(tokenize);
  b.lowercase = lowercase;
  b.smoothing = eval::parse_smoothing(smooth_method);
  b.smooth_value = smooth_value;
  return score(eval::Bleu(b), hypotheses, references, threads);
}

py::dict corpus_chrf(const std::vector<std::string>& hypotheses,
                     const std::vector<std::vector<std::string>>& references, int char_order, int word_order, int beta,
                     bool lowercase, bool whitespace, bool eps_smoothing, int threads) {
  eval::ChrfOptions c;
  c.char_order = char_order;
  c.word_order = word_order;
  c.beta = beta;
  c.lowercase = lowercase;
  c.whitespace = whitespace;
  c.eps_smoothing = eps_smoothing;
  return score(eval::Chrf(c), hypotheses, references, threads);
}

py::dict paper_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::vector<std::string>>& references,
                    const std::string& lang, std::optional<bool> split_compounds,
                    std::optional<bool> normalize_punctuation, bool aggressive_dashes, int threads) {
  eval::PaperBleuOptions p;
  p.lang = lang;
  p.split_compounds = split_compounds.value_or(lang == "de");  // score-bleu --paper's "auto"
  p.normalize_punctuation = normalize_punctuation.value_or(lang == "de");
  p.aggressive_dash_splits = aggressive_dashes;
  const eval::PaperBleu metric(p);
  py::dict out = score(metric, hypotheses, references, threads);
  out["description"] = metric.description();
  return out;
}

}  // namespace dragoman::python
