// `dragoman serve`'s counters, exposed at GET /metrics in Prometheus' text format (version 0.0.4):
// requests by endpoint and status, errors, queued sentences, decoding steps and the sentences each
// searched (continuous batching: the batch of that step) and the latency of each request
// (histograms), sentences and target tokens translated, and the target tokens/s of the last
// minute. Thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace dragoman::serve {

// A Prometheus histogram: cumulative counts at fixed upper bounds, their sum and count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
  void observe(double value);
  // The metric's lines (# HELP, # TYPE, buckets, sum, count).
  std::string text(const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
 public:
  Metrics();
  void request(const std::string& endpoint, int status, double seconds);
  // A decoding step that searched `sentences` and finished `finished` with `target_tokens` target
  // tokens in their 1-best translations.
  void step(std::int64_t sentences, std::int64_t finished, std::int64_t target_tokens);
  // The exposition; `queued` is the number of sentences waiting now.
  std::string text(std::int64_t queued);
  // The last minute's summary for the log, and a new minute begins.
  std::string minute_summary();

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  std::uint64_t errors_ = 0, sentences_ = 0, target_tokens_ = 0, steps_ = 0;
  Histogram step_sentences_, latency_;
  // The last minute: sentences, target tokens and requests since minute_start_.
  std::chrono::steady_clock::time_point minute_start_ = std::chrono::steady_clock::now();
  std::uint64_t minute_sentences_ = 0, minute_tokens_ = 0, minute_requests_ = 0, minute_errors_ = 0;
  double last_tokens_per_second_ = 0;
};

}  // namespace dragoman::serve
