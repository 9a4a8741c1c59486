// serve's metrics (see metrics.h).
#include "serve/metrics.h"

#include <cstdio>
#include <cstdlib>

namespace dragoman::serve {
namespace {

// The shortest text that reads back as `value` ("0.005", not "0.0050000000000000001").
std::string number(double value) {
  char text[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

std::string header(const std::string& name, const std::string& help, const char* type) {
  return "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

void Histogram::observe(double value) {
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) ++counts_[i];
  }
  ++count_;
  sum_ += value;
}

std::string Histogram::text(const std::string& name, const std::string& help) const {
  std::string out = header(name, help, "histogram");
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(counts_[i]) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
  return out;
}

Metrics::Metrics()
    : step_sentences_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}),
      latency_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}) {}

void Metrics::request(const std::string& endpoint, int status, double seconds) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
  ++minute_requests_;
  if (status >= 400) {
    ++errors_;
    ++minute_errors_;
  }
  latency_.observe(seconds);
}

void Metrics::step(std::int64_t sentences, std::int64_t finished, std::int64_t target_tokens) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++steps_;
  sentences_ += static_cast<std::uint64_t>(finished);
  target_tokens_ += static_cast<std::uint64_t>(target_tokens);
  minute_sentences_ += static_cast<std::uint64_t>(finished);
  minute_tokens_ += static_cast<std::uint64_t>(target_tokens);
  step_sentences_.observe(static_cast<double>(sentences));
}

std::string Metrics::text(std::int64_t queued) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::string out = header("dragoman_requests_total", "Requests answered, by endpoint and HTTP status.", "counter");
  for (const auto& [key, count] : requests_) {
    out += "dragoman_requests_total{endpoint=\"" + key.first + "\",code=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(count) + "\n";
  }
  out += header("dragoman_errors_total", "Requests answered with a status of 400 or more.", "counter");
  out += "dragoman_errors_total " + std::to_string(errors_) + "\n";
  out += header("dragoman_queue_sentences", "Sentences queued and not started yet.", "gauge");
  out += "dragoman_queue_sentences " + std::to_string(queued) + "\n";
  out += header("dragoman_decoding_steps_total", "Decoding steps run (each over the sentences being searched).",
                "counter");
  out += "dragoman_decoding_steps_total " + std::to_string(steps_) + "\n";
  out += step_sentences_.text("dragoman_step_sentences",
                              "Sentences searched per decoding step (the step's batch, of one or more requests).");
  out += latency_.text("dragoman_request_duration_seconds", "Time from a request's arrival to its answer.");
  out += header("dragoman_sentences_total", "Sentences translated.", "counter");
  out += "dragoman_sentences_total " + std::to_string(sentences_) + "\n";
  out += header("dragoman_target_tokens_total", "Target tokens of the 1-best translations.", "counter");
  out += "dragoman_target_tokens_total " + std::to_string(target_tokens_) + "\n";
  out += header("dragoman_target_tokens_per_second", "Target tokens/s over the last full minute.", "gauge");
  out += "dragoman_target_tokens_per_second " + number(last_tokens_per_second_) + "\n";
  return out;
}

std::string Metrics::minute_summary() {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - minute_start_).count();
  last_tokens_per_second_ = seconds > 0 ? static_cast<double>(minute_tokens_) / seconds : 0.0;
  char text[256];
  std::snprintf(text, sizeof text,
                "serve: last %.0f s: %llu requests (%llu errors), %llu sentences, %.0f target tokens/s", seconds,
                static_cast<unsigned long long>(minute_requests_), static_cast<unsigned long long>(minute_errors_),
                static_cast<unsigned long long>(minute_sentences_), last_tokens_per_second_);
  minute_start_ = now;
  minute_requests_ = minute_errors_ = minute_sentences_ = minute_tokens_ = 0;
  return text;
}

}  // namespace dragoman::serve
