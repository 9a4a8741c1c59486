// chrF (Popović, 2015) and chrF++ (Popović, 2017) exactly as sacreBLEU 2.x computes them:
// character n-grams up to char_order (whitespace removed unless kept), optional word n-grams up
// to word_order with punctuation split off word edges, per segment the reference with the best
// F-score, statistics summed over the corpus, F-beta of the effective-order averaged precision
// and recall (or chrF++.py's epsilon smoothing).
#pragma once

#include "eval/metric.h"

namespace dragoman::eval {

struct ChrfOptions {
  int char_order = 6;
  int word_order = 0;  // 2 gives chrF++
  int beta = 2;
  bool lowercase = false;
  bool whitespace = false;     // keep whitespace in character n-grams
  bool eps_smoothing = false;  // chrF++.py/Moses/NLTK smoothing instead of effective order
};

class Chrf final : public Metric {
 public:
  explicit Chrf(ChrfOptions options);

  std::string key() const override { return "CHRF"; }
  // [n_hyp, n_ref, n_match] for each order: character orders first, then word orders.
  std::size_t stats_size() const override { return 3 * static_cast<std::size_t>(order()); }
  void segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs, std::int64_t* out) const override;
  MetricResult result(const std::int64_t* stats, std::size_t nrefs) const override;

  // sacreBLEU's CHRF._compute_f_score, in percent.
  double f_score(const std::int64_t* stats) const;
  std::string name() const;
  std::string signature(std::size_t nrefs, bool short_form) const;

 private:
  int order() const { return options_.char_order + options_.word_order; }
  ChrfOptions options_;
};

}  // namespace dragoman::eval
