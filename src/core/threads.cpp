// Compute threads (see threads.h).
#include "core/threads.h"

#include <omp.h>

#include "core/parallel.h"
#include "kernels/cpu/gemm.h"

namespace dragoman {

void set_compute_threads(int n) {
  if (n < 1) n = default_thread_count();
  omp_set_num_threads(n);
  cpu::set_gemm_threads(n);
}

int compute_threads() { return omp_get_max_threads(); }

}  // namespace dragoman
