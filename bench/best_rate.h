// The timing loop the benchmarks share: `work` units per run of `run` (elements, flops), measured
// as the best of `windows` windows of as many runs as fit in about `window_seconds`.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>

namespace dragoman::bench {

// Units per second (the best window's), after one warm-up run and one timed run that sizes the windows.
inline double best_rate(double work, int windows, double window_seconds, const std::function<void()>& run) {
  using Clock = std::chrono::steady_clock;
  run();  // warm-up (oneDNN's kernels generated, buffers touched)
  const auto start = Clock::now();
  run();
  const double once = std::chrono::duration<double>(Clock::now() - start).count();
  const int reps = std::max(1, static_cast<int>(window_seconds / std::max(once, 1e-9)));
  double best = 0;
  for (int w = 0; w < windows; ++w) {
    const auto t0 = Clock::now();
    for (int r = 0; r < reps; ++r) run();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, work * reps / seconds);
  }
  return best;
}

}  // namespace dragoman::bench
