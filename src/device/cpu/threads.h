// The number of threads the CPU kernels use: OpenMP loops in kernels/cpu and OpenBLAS's GEMM.
#pragma once

#include <string>

namespace dragoman::cpu {

// The most threads any command accepts: far above any machine this runs on, and below the point
// where a typo (threads: 10000) would start that many threads.
inline constexpr int kMaxThreads = 1024;

// The thread count to use when `requested` were asked for: 0 means OMP_NUM_THREADS when it is set
// (a positive integer), else all cores, at most kMaxThreads. Warns, naming `what` (e.g. "translate:
// --threads"), when more threads than cores were asked for: they would wait for each other.
int resolve_threads(int requested, const std::string& what);

// Sets both; n < 1 means resolve_threads(0): OMP_NUM_THREADS or all cores. Call before the work
// starts (not thread-safe).
void set_compute_threads(int n);
int compute_threads();
// OpenMP's thread count for the parallel loops the calling thread starts (a data-parallel worker
// thread of its own; set_compute_threads sets the main thread's and OpenBLAS's).
void use_compute_threads_here(int n);

}  // namespace dragoman::cpu
