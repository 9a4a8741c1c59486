// SIGINT/SIGTERM handling (see stop_signal.h).
#include "cli/stop_signal.h"

namespace dragoman::cli {
namespace {

std::atomic<int> g_stop_signal{0};

// The first SIGINT/SIGTERM asks the command to stop; a second one ends the process at once.
extern "C" void on_stop_signal(int signal) {
  if (g_stop_signal.exchange(signal) != 0) {
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
}

int StopSignals::received() const { return g_stop_signal.load(); }

const std::atomic<int>* StopSignals::flag() const { return &g_stop_signal; }

}  // namespace dragoman::cli
