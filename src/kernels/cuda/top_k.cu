// The k best entries of each row on CUDA (see top_k.h).
#include "kernels/top_k.h"

#include <cmath>
#include <limits>

#include "device/cuda/check.h"
#include "kernels/common/top_k.h"

namespace dragoman::cuda {
namespace {

using common::top_k::before;
using common::top_k::candidate;
using common::top_k::kNoId;

constexpr int kWarp = 32;

// One pass: each thread keeps the kList best of its entries (ids threadIdx.x, + kThreads, ...) in
// registers, sorted; the k <= kList best of the row are among the threads' lists (a thread holds at
// most k of them). Then k rounds merge the lists in shared memory: every thread offers the head of
// its list, a warp-shuffle and a shared-memory argmax find the best, its owner moves on.
template <int kList, int kThreads>
__global__ void __launch_bounds__(kThreads)
    top_k_one_pass_kernel(const float* x, std::int64_t v, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
                          std::int32_t eos, float* values, std::int32_t* ids, float* eos_values) {
  static_assert(kThreads % kWarp == 0, "whole warps");
  constexpr int kWarps = kThreads / kWarp;
  __shared__ float list_value[kList * kThreads];  // entry j of thread t at [j * kThreads + t]
  __shared__ std::int32_t list_id[kList * kThreads];
  __shared__ float warp_value[kWarps];
  __shared__ std::int32_t warp_id[kWarps];
  const std::int64_t r = blockIdx.x;
  const float* row = x + r * v;
  const int tid = static_cast<int>(threadIdx.x);

  float best_value[kList];
  std::int32_t best_id[kList];
#pragma unroll
  for (int j = 0; j < kList; ++j) {
    best_value[j] = -INFINITY;
    best_id[j] = kNoId;
  }
  for (std::int64_t i = tid; i < v; i += kThreads) {
    const auto id = static_cast<std::int32_t>(i);
    const float value = row[i];
    if (candidate(value, id, skip_a, skip_b)) common::top_k::insert(best_value, best_id, value, id);
  }
#pragma unroll
  for (int j = 0; j < kList; ++j) {
    list_value[j * kThreads + tid] = best_value[j];
    list_id[j * kThreads + tid] = best_id[j];
  }
  // (No barrier: each thread reads back only its own entries.)

  int head = 0;  // this thread's next entry
  const int lane = tid % kWarp, warp = tid / kWarp;
  for (std::int64_t j = 0; j < k; ++j) {
    const float mine = head < kList ? list_value[head * kThreads + tid] : -INFINITY;
    const std::int32_t mine_id = head < kList ? list_id[head * kThreads + tid] : kNoId;
    float value = mine;
    std::int32_t id = mine_id;
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {  // every lane ends with the warp's best
      const float other = __shfl_xor_sync(0xffffffffu, value, offset);
      const std::int32_t other_id = __shfl_xor_sync(0xffffffffu, id, offset);
      if (before(other, other_id, value, id)) {
        value = other;
        id = other_id;
      }
    }
    if (lane == 0) {
      warp_value[warp] = value;
      warp_id[warp] = id;
    }
    __syncthreads();
    value = warp_value[0];
    id = warp_id[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) {
      if (before(warp_value[w], warp_id[w], value, id)) {
        value = warp_value[w];
        id = warp_id[w];
      }
    }
    if (id != kNoId && mine_id == id) ++head;  // ids are distinct: one owner
    if (tid == 0) {
      values[r * k + j] = id == kNoId ? -INFINITY : value;
      ids[r * k + j] = id == kNoId ? -1 : id;
    }
    __syncthreads();  // warp_* are rewritten by the next round
  }
  if (tid == 0) eos_values[r] = row[eos];
}

constexpr int kPassThreads = 256;

// k passes over the row, each a block-wide argmax over the entries after the previous pick: for
// any k (those above the one-pass kernel's lists).
__global__ void top_k_passes_kernel(const float* x, std::int64_t v, std::int64_t k, std::int32_t skip_a,
                                    std::int32_t skip_b, std::int32_t eos, float* values, std::int32_t* ids,
                                    float* eos_values) {
  __shared__ float best_value[kPassThreads];
  __shared__ std::int32_t best_id[kPassThreads];
  const std::int64_t r = blockIdx.x;
  const float* row = x + r * v;
  float last = INFINITY;  // the previous pick; this pass takes the best entry after it
  std::int32_t last_id = -1;
  for (std::int64_t j = 0; j < k; ++j) {
    float mine = -INFINITY;
    std::int32_t mine_id = kNoId;
    for (std::int64_t i = threadIdx.x; i < v; i += kPassThreads) {
      const auto id = static_cast<std::int32_t>(i);
      const float value = row[i];
      if (!candidate(value, id, skip_a, skip_b)) continue;
      if (!before(last, last_id, value, id)) continue;  // picked already (or better)
      if (before(value, id, mine, mine_id)) {
        mine = value;
        mine_id = id;
      }
    }
    best_value[threadIdx.x] = mine;
    best_id[threadIdx.x] = mine_id;
    __syncthreads();
    for (int stride = kPassThreads / 2; stride > 0; stride /= 2) {
      if (threadIdx.x < stride && before(best_value[threadIdx.x + stride], best_id[threadIdx.x + stride],
                                         best_value[threadIdx.x], best_id[threadIdx.x])) {
        best_value[threadIdx.x] = best_value[threadIdx.x + stride];
        best_id[threadIdx.x] = best_id[threadIdx.x + stride];
      }
      __syncthreads();
    }
    last = best_value[0];
    last_id = best_id[0];
    if (threadIdx.x == 0) {
      values[r * k + j] = last_id == kNoId ? -INFINITY : last;
      ids[r * k + j] = last_id == kNoId ? -1 : last_id;
    }
    __syncthreads();  // best_* are rewritten by the next pass
  }
  if (threadIdx.x == 0) eos_values[r] = row[eos];
}

template <int kList>
void launch_one_pass(const float* x, std::int64_t rows, std::int64_t v, std::int64_t k, std::int32_t skip_a,
                     std::int32_t skip_b, std::int32_t eos, float* values, std::int32_t* ids, float* eos_values,
                     Stream stream) {
  constexpr int kThreads = common::top_k::list_threads(kList);
  top_k_one_pass_kernel<kList, kThreads>
      <<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, v, k, skip_a, skip_b, eos, values, ids, eos_values);
}

}  // namespace

void top_k_rows(const float* x, std::int64_t rows, std::int64_t v, std::int64_t k, std::int32_t skip_a,
                std::int32_t skip_b, std::int32_t eos, float* values, std::int32_t* ids, float* eos_values,
                Stream stream) {
  if (rows == 0) return;
  switch (common::top_k::list_length(k)) {
    case 2: launch_one_pass<2>(x, rows, v, k, skip_a, skip_b, eos, values, ids, eos_values, stream); break;
    case 4: launch_one_pass<4>(x, rows, v, k, skip_a, skip_b, eos, values, ids, eos_values, stream); break;
    case 8: launch_one_pass<8>(x, rows, v, k, skip_a, skip_b, eos, values, ids, eos_values, stream); break;
    case 16: launch_one_pass<16>(x, rows, v, k, skip_a, skip_b, eos, values, ids, eos_values, stream); break;
    case 32: launch_one_pass<32>(x, rows, v, k, skip_a, skip_b, eos, values, ids, eos_values, stream); break;
    default:
      top_k_passes_kernel<<<static_cast<unsigned>(rows), kPassThreads, 0, stream>>>(x, v, k, skip_a, skip_b, eos,
                                                                                    values, ids, eos_values);
  }
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dragoman::cuda
