// SIGINT/SIGTERM for long-running subcommands (train, translate): while a StopSignals object lives,
// the first signal only sets a flag that the command checks between units of work (an update, a
// batch), so it can save its state or discard a half-written output and exit 128 + signal. A
// second signal ends the process at once. The previous handlers come back when it is destroyed.
#pragma once

#include <atomic>
#include <csignal>

namespace dragoman::cli {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received (SIGINT or SIGTERM), or 0.
  int received() const;
  // The flag itself, for library code that polls it.
  const std::atomic<int>* flag() const;

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

}  // namespace dragoman::cli
