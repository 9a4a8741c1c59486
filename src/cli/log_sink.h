// The log's sink on standard error: spdlog's colour sink, each log line written above the status
// line of progress (io/status_line.h), which then stays at the bottom of the terminal.
#pragma once

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "io/status_line.h"

namespace dragoman::cli {

class StderrLogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  StderrLogSink() : inner_(std::make_shared<spdlog::sinks::stderr_color_sink_st>()) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    io::StatusLine::write_above([&] { inner_->log(msg); });
  }
  void flush_() override { inner_->flush(); }
  void set_pattern_(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter_(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  std::shared_ptr<spdlog::sinks::stderr_color_sink_st> inner_;
};

}  // namespace dragoman::cli
