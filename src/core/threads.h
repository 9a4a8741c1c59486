// The number of threads the CPU kernels use: OpenMP loops in kernels/cpu and OpenBLAS's GEMM.
#pragma once

namespace dragoman {

// Sets both; n < 1 means default_thread_count(). Call before the work starts (not thread-safe).
void set_compute_threads(int n);
int compute_threads();

}  // namespace dragoman
