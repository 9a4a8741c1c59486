// score-bleu's metrics for Python (metrics.cpp): each returns a dict of name, score (full
// precision), signature, verbose and details (score-bleu --json's statistics). `references` is a
// list of reference streams, each one line a hypothesis (sacrebleu.corpus_bleu's shape).
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

namespace dragoman::python {

pybind11::dict corpus_bleu(const std::vector<std::string>& hypotheses,
                           const std::vector<std::vector<std::string>>& references, const std::string& tokenize,
                           bool lowercase, const std::string& smooth_method, std::optional<double> smooth_value,
                           int threads);
pybind11::dict corpus_chrf(const std::vector<std::string>& hypotheses,
                           const std::vector<std::vector<std::string>>& references, int char_order, int word_order,
                           int beta, bool lowercase, bool whitespace, bool eps_smoothing, int threads);
// The paper's tokenized BLEU (score-bleu --paper LANG): compounds split and punctuation normalised
// for German unless told (None: score-bleu's "auto").
pybind11::dict paper_bleu(const std::vector<std::string>& hypotheses,
                          const std::vector<std::vector<std::string>>& references, const std::string& lang,
                          std::optional<bool> split_compounds, std::optional<bool> normalize_punctuation,
                          bool aggressive_dashes, int threads);

}  // namespace dragoman::python
