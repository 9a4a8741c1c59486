// Corpus scoring (see corpus.h).
#include "eval/corpus_score.h"

#include "base/error.h"
#include "base/parallel.h"

namespace dragoman::eval {

std::vector<std::int64_t> segment_statistics(const Metric& metric, const Corpus& corpus, int threads) {
  if (corpus.refs.empty()) throw Error("scoring needs at least one reference stream");
  const std::size_t n = corpus.hyps.size();
  for (const auto& stream : corpus.refs) {
    if (stream.size() != n) {
      throw Error("reference stream has " + std::to_string(stream.size()) + " segments, hypotheses have " +
                  std::to_string(n));
    }
  }
  const std::size_t width = metric.stats_size();
  std::vector<std::int64_t> stats(n * width, 0);
  parallel_for(n, threads, [&](std::size_t begin, std::size_t end) {
    std::vector<std::string_view> refs(corpus.refs.size());
    for (std::size_t i = begin; i < end; ++i) {
      for (std::size_t r = 0; r < refs.size(); ++r) refs[r] = corpus.refs[r][i];
      metric.segment_stats(corpus.hyps[i], refs, stats.data() + i * width);
    }
  });
  return stats;
}

std::vector<std::int64_t> sum_statistics(const std::vector<std::int64_t>& per_segment, std::size_t stats_size) {
  std::vector<std::int64_t> sum(stats_size, 0);
  for (std::size_t i = 0; i < per_segment.size(); ++i) sum[i % stats_size] += per_segment[i];
  return sum;
}

MetricResult corpus_score(const Metric& metric, const Corpus& corpus, int threads) {
  const std::vector<std::int64_t> sum =
      sum_statistics(segment_statistics(metric, corpus, threads), metric.stats_size());
  return metric.result(sum.data(), corpus.refs.size());
}

}  // namespace dragoman::eval
