// SIGINT/SIGTERM handling (see stop_signal.h).
#include "cli/stop_signal.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace dragoman::cli {
namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_active{false};
std::chrono::steady_clock::time_point g_first_at;  // when g_stop_signal was set (signal thread only)
// What the process did with each signal before: with no StopSignals alive, an ignored one stays
// ignored (a background job of a non-interactive shell ignores SIGINT).
bool g_int_ignored = false;
bool g_term_ignored = false;
std::mutex g_abort_mutex;
std::string g_abort_path;  // guarded by g_abort_mutex

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Ends the process by `signal` with its default action, so that a shell sees 128 + signal.
[[noreturn]] void die_by(int signal) {
  std::signal(signal, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(signal);  // delivered to this thread, which no longer blocks it
  ::_exit(128 + signal);
}

bool ignored_before(int signal) {
  struct sigaction action {};
  return ::sigaction(signal, nullptr, &action) == 0 && action.sa_handler == SIG_IGN;
}

void receive(int signal) {
  if (!g_active.load()) {
    if ((signal == SIGINT && g_int_ignored) || (signal == SIGTERM && g_term_ignored)) return;
    die_by(signal);
  }
  const auto now = std::chrono::steady_clock::now();
  int expected = 0;
  if (g_stop_signal.compare_exchange_strong(expected, signal)) {
    g_first_at = now;
    return;
  }
  if (expected == signal && now - g_first_at < std::chrono::milliseconds(kDuplicateWindowMs)) return;
  {
    const std::lock_guard<std::mutex> lock(g_abort_mutex);
    if (!g_abort_path.empty()) ::unlink(g_abort_path.c_str());
  }
  die_by(signal);
}

void signal_loop() {
  const sigset_t set = stop_set();
  for (;;) {
    int signal = 0;
    if (::sigwait(&set, &signal) == 0) receive(signal);
  }
}

}  // namespace

void start_signal_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_int_ignored = ignored_before(SIGINT);
    g_term_ignored = ignored_before(SIGTERM);
    const sigset_t set = stop_set();
    if (const int error = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); error != 0) {
      std::fprintf(stderr, "error: cannot block SIGINT/SIGTERM: %s\n", std::strerror(error));
      std::exit(1);
    }
    std::thread(signal_loop).detach();
  });
}

void unblock_stop_signals() {
  const sigset_t set = stop_set();
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

StopSignals::StopSignals() {
  start_signal_thread();  // (main() has started it already; a test binary may not have)
  g_stop_signal.store(0);
  g_active.store(true);
}

StopSignals::~StopSignals() {
  g_active.store(false);
  remove_on_abort("");
}

void StopSignals::remove_on_abort(const std::string& path) {
  const std::lock_guard<std::mutex> lock(g_abort_mutex);
  g_abort_path = path;
}

int StopSignals::received() const { return g_stop_signal.load(); }

const std::atomic<int>* StopSignals::flag() const { return &g_stop_signal; }

}  // namespace dragoman::cli
