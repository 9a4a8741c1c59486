// Compute threads (see threads.h).
#include "device/cpu/threads.h"

#include <cblas.h>
#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "base/parallel.h"

namespace dragoman::cpu {
namespace {

// OMP_NUM_THREADS as OpenMP reads it (the first number of a list); nothing when unset or invalid.
std::optional<int> omp_num_threads() {
  const char* value = std::getenv("OMP_NUM_THREADS");
  if (value == nullptr) return std::nullopt;
  int threads = 0;
  const char* end = value + std::strlen(value);
  const auto [stop, error] = std::from_chars(value, end, threads);
  if (error != std::errc() || threads < 1 || (stop != end && *stop != ',')) return std::nullopt;
  return threads;
}

}  // namespace

int resolve_threads(int requested, const std::string& what) {
  const int cores = default_thread_count();
  if (requested < 1) return std::min(omp_num_threads().value_or(cores), kMaxThreads);
  if (requested > cores) {
    spdlog::warn("{} {} is more than the {} cores of this machine: the threads will wait for each other", what,
                 requested, cores);
  }
  return requested;
}

void set_compute_threads(int n) {
  if (n < 1) n = resolve_threads(0, "");
  omp_set_num_threads(n);
  openblas_set_num_threads(n);  // OpenBLAS threads by itself; oneDNN runs on the OpenMP threads
}

int compute_threads() { return omp_get_max_threads(); }

void use_compute_threads_here(int n) { omp_set_num_threads(std::max(n, 1)); }

}  // namespace dragoman::cpu
