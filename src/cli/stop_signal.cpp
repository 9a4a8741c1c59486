// SIGINT/SIGTERM handling (see stop_signal.h).
#include "cli/stop_signal.h"

#include <unistd.h>

namespace dragoman::cli {
namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<const char*> g_abort_path{nullptr};

// The first SIGINT/SIGTERM asks the command to stop; a second one ends the process at once
// (unlink and raise are async-signal-safe).
extern "C" void on_stop_signal(int signal) {
  if (g_stop_signal.exchange(signal) != 0) {
    if (const char* path = g_abort_path.load(); path != nullptr) ::unlink(path);
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
}

}  // namespace

StopSignals::StopSignals() {
  g_stop_signal.store(0);
  previous_int_ = std::signal(SIGINT, on_stop_signal);
  previous_term_ = std::signal(SIGTERM, on_stop_signal);
}

StopSignals::~StopSignals() {
  std::signal(SIGINT, previous_int_);
  std::signal(SIGTERM, previous_term_);
  g_abort_path.store(nullptr);
}

void StopSignals::remove_on_abort(const std::string& path) {
  g_abort_path.store(nullptr);
  abort_path_ = path;
  g_abort_path.store(abort_path_.empty() ? nullptr : abort_path_.c_str());
}

int StopSignals::received() const { return g_stop_signal.load(); }

const std::atomic<int>* StopSignals::flag() const { return &g_stop_signal; }

}  // namespace dragoman::cli
