// The k best entries of each row on CUDA (see top_k.h).
#include "kernels/cuda/top_k.h"

#include <cmath>
#include <limits>

#include "kernels/cuda/check.h"

namespace dragoman::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::int32_t kNone = std::numeric_limits<std::int32_t>::max();

// (value, id) a comes before b: a larger value, or an equal one with a smaller id.
__device__ bool before(float a, std::int32_t a_id, float b, std::int32_t b_id) {
  return a > b || (a == b && a_id < b_id);
}

__global__ void top_k_kernel(const float* x, std::int64_t v, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
                             std::int32_t eos, float* values, std::int32_t* ids, float* eos_values) {
  __shared__ float best_value[kThreads];
  __shared__ std::int32_t best_id[kThreads];
  const std::int64_t r = blockIdx.x;
  const float* row = x + r * v;
  float last = INFINITY;  // the previous pick; this pass takes the best entry after it
  std::int32_t last_id = -1;
  for (std::int64_t j = 0; j < k; ++j) {
    float mine = -INFINITY;
    std::int32_t mine_id = kNone;
    for (std::int64_t i = threadIdx.x; i < v; i += kThreads) {
      const auto id = static_cast<std::int32_t>(i);
      const float value = row[i];
      if (id == skip_a || id == skip_b || value != value) continue;  // left out, or NaN
      if (!before(last, last_id, value, id)) continue;               // picked already (or better)
      if (before(value, id, mine, mine_id)) {
        mine = value;
        mine_id = id;
      }
    }
    best_value[threadIdx.x] = mine;
    best_id[threadIdx.x] = mine_id;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
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
      values[r * k + j] = last_id == kNone ? -INFINITY : last;
      ids[r * k + j] = last_id == kNone ? -1 : last_id;
    }
    __syncthreads();  // best_* are rewritten by the next pass
  }
  if (threadIdx.x == 0) eos_values[r] = row[eos];
}

}  // namespace

void top_k_rows(const float* x, std::int64_t rows, std::int64_t v, std::int64_t k, std::int32_t skip_a,
                std::int32_t skip_b, std::int32_t eos, float* values, std::int32_t* ids, float* eos_values,
                Stream stream) {
  if (rows == 0) return;
  top_k_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, v, k, skip_a, skip_b, eos, values, ids,
                                                                     eos_values);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dragoman::cuda
