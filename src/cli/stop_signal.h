// SIGINT/SIGTERM for long-running subcommands (train, translate): while a StopSignals object lives,
// the first signal only sets a flag that the command checks between units of work (an update, a
// batch), so it can save its state or discard a half-written output and exit 128 + signal. A
// second signal ends the process at once (after removing the file given to remove_on_abort). The
// previous handlers come back when it is destroyed. Handlers restart interrupted system calls, so a
// command blocked reading a pipe sees the flag once input arrives or ends.
#pragma once

#include <atomic>
#include <csignal>
#include <string>

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
  // A file (a temporary output) that a second signal removes before ending the process ("": none).
  void remove_on_abort(const std::string& path);

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
  std::string abort_path_;  // kept alive while the handler may read it
};

}  // namespace dragoman::cli
