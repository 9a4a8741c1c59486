// SIGINT/SIGTERM for long-running subcommands (train, translate): while a StopSignals object lives,
// the first signal only sets a flag that the command checks between units of work (an update, a
// batch), so it can save its state or discard a half-written output and exit 128 + signal. A
// second signal ends the process at once (after removing the file given to remove_on_abort). With
// no StopSignals alive, a signal ends the process as it would by default.
//
// No signal handler ever runs on a thread doing work. main() calls start_signal_thread() before any
// other thread exists: SIGINT and SIGTERM are blocked there, so in every thread created later
// (OpenMP's, oneDNN's, MPI's), and one thread of our own takes them with sigwait(). The reason:
// a handler's frame is written below the interrupted thread's stack pointer, and the JIT GEMM
// kernels of oneDNN before 3.11 (Debian ships 2.6) point rsp into the heap while they run
// (oneDNN issue #4845): Ctrl-C during training corrupted the heap in about one run in ten.
//
// A second signal of the same kind within kDuplicateWindowMs of the first is the same request:
// coreutils `timeout` sends its signal to the command and then to the command's process group, so
// a run under timeout receives it twice in the same millisecond and must still save its state.
#pragma once

#include <atomic>
#include <csignal>
#include <string>

namespace dragoman::cli {

inline constexpr int kDuplicateWindowMs = 250;

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it creates from then on)
// and starts the thread that receives them. Once per process; later calls do nothing. A process
// that forks must unblock them in the child (unblock_stop_signals).
void start_signal_thread();
// Unblocks SIGINT and SIGTERM in the calling thread (a forked child, before its work).
void unblock_stop_signals();

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
};

}  // namespace dragoman::cli
