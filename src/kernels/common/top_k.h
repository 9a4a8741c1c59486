// The pieces of the one-pass top-k (kernels/cuda/top_k.cu) that the CPU can run too: the order of
// candidates and a thread's sorted list of its best ones. tests/kernels/test_top_k_lists.cpp runs
// the kernel's algorithm with them on the CPU (every thread's list, then the merge of their heads)
// against the spec, cpu::top_k_row.
#pragma once

#include <cstdint>
#include <limits>

#include "base/host_device.h"

namespace dragoman::common::top_k {

// The id of an empty list entry (its value is -inf): after every real entry.
inline constexpr std::int32_t kNoId = std::numeric_limits<std::int32_t>::max();

// (value, id) a comes before b: a larger value, or an equal one with a smaller id.
DRAGOMAN_HOST_DEVICE inline bool before(float a, std::int32_t a_id, float b, std::int32_t b_id) {
  return a > b || (a == b && a_id < b_id);
}

// Whether entry `id` of a row is a candidate: not left out and not NaN.
DRAGOMAN_HOST_DEVICE inline bool candidate(float value, std::int32_t id, std::int32_t skip_a, std::int32_t skip_b) {
  return id != skip_a && id != skip_b && value == value;
}

// Adds (value, id) to a list of kList entries sorted by `before` when it comes before the last one,
// which it replaces; moves it up to its place with static indices only (the list stays in registers).
template <int kList>
DRAGOMAN_HOST_DEVICE inline void insert(float (&values)[kList], std::int32_t (&ids)[kList], float value,
                                        std::int32_t id) {
  if (!before(value, id, values[kList - 1], ids[kList - 1])) return;
  values[kList - 1] = value;
  ids[kList - 1] = id;
  for (int j = kList - 1; j > 0; --j) {  // a constant count: unrolled by nvcc
    if (before(values[j], ids[j], values[j - 1], ids[j - 1])) {
      const float value_j = values[j];
      const std::int32_t id_j = ids[j];
      values[j] = values[j - 1];
      ids[j] = ids[j - 1];
      values[j - 1] = value_j;
      ids[j - 1] = id_j;
    }
  }
}

// The one-pass kernel's list length for k: the smallest of 2, 4, 8, 16, 32 that holds k (0 above
// 32: k passes over the row instead), and its threads a block (lists of 32 in half as many, so the
// lists fit 32 KB of shared memory).
constexpr int list_length(std::int64_t k) {
  return k <= 2 ? 2 : k <= 4 ? 4 : k <= 8 ? 8 : k <= 16 ? 16 : k <= 32 ? 32 : 0;
}
constexpr int list_threads(int list_length) { return list_length <= 16 ? 256 : 128; }

}  // namespace dragoman::common::top_k
