// Progress on standard error: a status line at the bottom of a terminal, redrawn in place (train's
// bar, translate's and score's line counts), which log lines pass above (cli/log_sink.h takes the
// line away for each log line and draws it again after it); off a terminal, a log line every so
// often instead, or nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/timing.h"

namespace dragoman::io {

// The one status line of the process (all functions thread-safe). Off a terminal every call does
// nothing, but write_above() runs its writer.
class StatusLine {
 public:
  static bool on_terminal();  // standard error is a terminal
  // Shows `text` (cut to the terminal's width) in place of the line shown, if any.
  static void show(const std::string& text);
  // Ends the line: it stays on the screen, and what is written next starts below it.
  static void finish();
  // Runs `write` (which writes whole lines to standard error) with the line taken away, then draws
  // it again below them.
  static void write_above(const std::function<void()>& write);
};

// "[#######.......]" of `fraction` (clamped to [0, 1]), `width` cells between the brackets.
std::string progress_bar(double fraction, int width);

// "<label> [bar] done/total <unit> | rate <unit>/s | ETA" (no bar, total or ETA when the total is
// unknown): the status line on a terminal, drawn at the first update, then at most 5 times a second,
// and at finish(); with `log_lines` off a terminal, a log line every 10 seconds instead.
class Progress {
 public:
  struct Options {
    bool on_terminal = true;  // the status line when standard error is a terminal
    bool log_lines = false;   // log lines when it is not
  };
  // `total`: the units to do, or -1 when unknown (a pipe: no bar, no ETA).
  Progress(std::string label, std::string unit, std::int64_t total, Options options);
  // Progress(...) with the default options: the status line on a terminal, nothing elsewhere.
  Progress(std::string label, std::string unit, std::int64_t total);
  // Ends the line if it is still drawn (an error cut the work short).
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void update(std::int64_t done);
  // Draws the last count and ends the line (a no-op when nothing was drawn).
  void finish();

  // The line for `done` units after `seconds` (what update() shows; for tests).
  std::string text(std::int64_t done, double seconds) const;

 private:
  std::string label_, unit_;
  std::int64_t total_;
  bool tty_, logs_;
  Clock::time_point start_ = Clock::now();
  double last_ = -1;  // when the line was last drawn or logged (-1: never)
  std::int64_t done_ = 0;
  bool drawn_ = false;
};

}  // namespace dragoman::io
