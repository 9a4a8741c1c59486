// Scoring a corpus with a Metric: per-segment statistics (in parallel), their sum, the score.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "eval/metric.h"

namespace dragoman::eval {

// One hypothesis per segment and one or more reference streams: refs[r][i] is reference r of
// segment i. All streams must have the same length (checked; throws dragoman::Error).
struct Corpus {
  std::vector<std::string_view> hyps;
  std::vector<std::vector<std::string_view>> refs;
};

// Row-major [segments, metric.stats_size()] statistics. Any thread count gives the same result.
std::vector<std::int64_t> segment_statistics(const Metric& metric, const Corpus& corpus, int threads);

// Sum of the rows of `per_segment` (sacreBLEU's sum_of_lists).
std::vector<std::int64_t> sum_statistics(const std::vector<std::int64_t>& per_segment, std::size_t stats_size);

// The corpus score: segment statistics, summed, scored.
MetricResult corpus_score(const Metric& metric, const Corpus& corpus, int threads);

}  // namespace dragoman::eval
