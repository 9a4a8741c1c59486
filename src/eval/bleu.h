// BLEU (Papineni et al., 2002) exactly as sacreBLEU 2.x computes it: tokenization (tokenizers.h),
// optional lowercasing, clipped n-gram matches up to order 4 with the per-n-gram maximum over
// references, the reference length closest to the hypothesis length (ties: the shorter),
// statistics summed over the corpus, then the smoothed geometric mean times the brevity penalty.
#pragma once

#include <optional>
#include <vector>

#include "eval/metric.h"
#include "eval/tokenizers.h"

namespace dragoman::eval {

enum class Smoothing { kExp, kFloor, kAddK, kNone };

// "exp", "floor", "add-k", "none"; anything else throws dragoman::Error.
Smoothing parse_smoothing(std::string_view name);
const char* smoothing_name(Smoothing smoothing);

struct BleuOptions {
  Tokenizer tokenizer = Tokenizer::k13a;
  bool lowercase = false;
  Smoothing smoothing = Smoothing::kExp;
  std::optional<double> smooth_value;  // unset: 0.1 for floor, 1 for add-k
  int max_order = 4;
  bool effective_order = false;  // sentence-level BLEU turns it on, as sacreBLEU does
};

struct BleuScore {
  double score = 0.0;
  std::vector<double> counts;      // matches per order (add-k smoothing adds k for n > 1)
  std::vector<double> totals;      // hypothesis n-grams per order (likewise)
  std::vector<double> precisions;  // in percent
  double bp = 1.0;
  std::int64_t sys_len = 0;
  std::int64_t ref_len = 0;
};

// sacreBLEU's BLEU.compute_bleu, operation for operation.
BleuScore compute_bleu(const std::vector<std::int64_t>& correct, const std::vector<std::int64_t>& total,
                       std::int64_t sys_len, std::int64_t ref_len, const BleuOptions& options);

class Bleu final : public Metric {
 public:
  explicit Bleu(BleuOptions options);

  std::string key() const override { return "BLEU"; }
  // [hyp_len, ref_len, correct_1..N, total_1..N]
  std::size_t stats_size() const override { return 2 + 2 * static_cast<std::size_t>(options_.max_order); }
  void segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs, std::int64_t* out) const override;
  MetricResult result(const std::int64_t* stats, std::size_t nrefs) const override;

  BleuScore score(const std::int64_t* stats) const;
  std::string signature(std::size_t nrefs, bool short_form) const;

 private:
  // The tokens of one line after sacreBLEU's preprocessing (rstrip, lowercase, tokenize, split).
  std::u32string preprocess(std::string_view line) const;

  BleuOptions options_;
};

}  // namespace dragoman::eval
