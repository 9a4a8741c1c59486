// parallel_for: splits [0, n) into `threads` contiguous chunks and runs fn(begin, end) on each in
// its own thread (the calling thread takes the first chunk). The first exception thrown by any
// chunk is rethrown in the caller after all chunks finished. Results must not depend on the
// split: callers write to disjoint outputs, or combine exactly (integers).
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace dragoman {

// The number of threads to use when the user did not say: the hardware's, at least 1.
inline int default_thread_count() { return std::max(1u, std::thread::hardware_concurrency()); }

template <typename Fn>
void parallel_for(std::size_t n, int threads, Fn fn) {
  const std::size_t workers =
      std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n));
  if (workers <= 1) {
    if (n > 0) fn(std::size_t{0}, n);
    return;
  }
  std::exception_ptr first_error;
  std::mutex error_mutex;
  const auto run = [&](std::size_t w) {
    const std::size_t begin = n * w / workers;
    const std::size_t end = n * (w + 1) / workers;
    try {
      fn(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(run, w);
  run(0);
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace dragoman
