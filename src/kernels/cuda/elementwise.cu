// Element-wise CUDA kernels (see elementwise.h): one thread per element in grid-stride loops; the
// column sums of bias_backward in two passes with a fixed order; the sum of squares per 2^16-element
// block. Compiled without FMA contraction (src/CMakeLists.txt), so a * b + c rounds twice as on the CPU.
#include "kernels/cuda/elementwise.h"

#include "core/philox.h"
#include "kernels/common/activation.h"
#include "kernels/common/dropout.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/launch.cuh"

namespace dragoman::cuda {
namespace {

using launch::first_index;
using launch::grid_stride;

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = store<T>(load(a[i]) + load(b[i]));
}

template <typename T>
__global__ void accumulate_kernel(T* y, const T* x, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = store<T>(load(y[i]) + load(x[i]));
}

template <typename T>
__global__ void scale_kernel(T* y, acc_t<T> s, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = store<T>(load(y[i]) * s);
}

template <typename T>
__global__ void relu_forward_kernel(const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = load(x[i]) > 0 ? x[i] : T();
}

template <typename T>
__global__ void relu_backward_kernel(const T* y, const T* dy, T* dx, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dx[i] = load(y[i]) > 0 ? dy[i] : T();
}

template <typename T>
__global__ void swish_forward_kernel(const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = common::swish_element(x[i]);
}

template <typename T>
__global__ void swish_backward_kernel(const T* x, const T* dy, T* dx, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dx[i] = common::swish_backward_element(x[i], dy[i]);
}

template <typename T>
__global__ void bias_add_kernel(T* y, const T* b, std::int64_t rows, std::int64_t cols) {
  const std::int64_t n = rows * cols;
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = store<T>(load(y[i]) + load(b[i % cols]));
}

// Pass 1 of bias_backward: workspace[chunk, c] = dy[r0, c] + dy[r0 + 1, c] + ... over the chunk's
// rows, in order (column_sums.cuh).
template <typename T>
__global__ void column_chunk_sums_kernel(const T* dy, acc_t<T>* workspace, std::int64_t rows, std::int64_t cols) {
  std::int64_t c, r0, r1;
  if (!column_chunk(rows, cols, c, r0, r1)) return;
  acc_t<T> sum = 0;
#pragma unroll 8
  for (std::int64_t r = r0; r < r1; ++r) sum += load(dy[r * cols + c]);
  workspace[static_cast<std::int64_t>(blockIdx.x) * cols + c] = sum;
}

template <typename T>
__global__ void dropout_kernel(const T* x, T* y, std::int64_t n, float threshold, acc_t<T> keep_scale,
                               std::uint64_t seed, std::uint64_t rng_stream) {
  const std::int64_t blocks = (n + 3) / 4;  // element i is philox::uniform(seed, rng_stream, i)
  for (std::int64_t b = first_index(); b < blocks; b += grid_stride()) {
    const philox::Block r = philox::block_bits(seed, rng_stream, static_cast<std::uint64_t>(b));
    for (int j = 0; j < 4 && 4 * b + j < n; ++j) {
      const std::int64_t i = 4 * b + j;
      y[i] = common::dropout_element(x[i], r.v[j], threshold, keep_scale);
    }
  }
}

constexpr unsigned kSumSquaresThreads = 256;

// partials[block] = sum of x[i]^2 over the block's kSumSquaresBlock elements: thread t sums
// elements t, t + 256, ... in order, then a fixed tree over the threads.
template <typename T>
__global__ void __launch_bounds__(kSumSquaresThreads)
    sum_squares_blocks_kernel(const T* x, std::int64_t n, double* partials) {
  __shared__ double sums[kSumSquaresThreads];
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * kSumSquaresBlock;
  const std::int64_t end = begin + kSumSquaresBlock < n ? begin + kSumSquaresBlock : n;
  double s = 0;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += kSumSquaresThreads) {
    const double v = load(x[i]);
    s += v * v;
  }
  sums[threadIdx.x] = s;
  __syncthreads();
  for (unsigned half = kSumSquaresThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = sums[0];
}

__global__ void sum_in_order_kernel(const double* partials, std::int64_t count, double* result) {
  double total = 0;
  for (std::int64_t k = 0; k < count; ++k) total += partials[k];
  *result = total;
}

}  // namespace

template <typename T>
void add(const T* a, const T* b, T* y, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  add_kernel<T><<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(a, b, y, n);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void accumulate(T* y, const T* x, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  accumulate_kernel<T><<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(y, x, n);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void scale(T* y, acc_t<T> s, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  scale_kernel<T><<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(y, s, n);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void relu_forward(const T* x, T* y, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  relu_forward_kernel<T><<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(x, y, n);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void relu_backward(const T* y, const T* dy, T* dx, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  relu_backward_kernel<T><<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(y, dy, dx, n);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void swish_forward(const T* x, T* y, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  swish_forward_kernel<T><<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(x, y, n);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void swish_backward(const T* x, const T* dy, T* dx, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  swish_backward_kernel<T><<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(x, dy, dx, n);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void bias_add(T* y, const T* b, std::int64_t rows, std::int64_t cols, Stream stream) {
  if (rows <= 0 || cols <= 0) return;
  bias_add_kernel<T><<<launch::blocks_for(rows * cols), launch::kThreads, 0, stream>>>(y, b, rows, cols);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void bias_backward(const T* dy, acc_t<T>* db, std::int64_t rows, std::int64_t cols, acc_t<T>* workspace,
                   Stream stream) {
  if (rows <= 0 || cols <= 0) return;
  const std::int64_t chunks = column_sum_chunks(rows);
  column_chunk_sums_kernel<T><<<column_sum_grid(rows, cols), kColumnSumThreads, 0, stream>>>(dy, workspace, rows, cols);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  add_chunk_sums(workspace, db, chunks, cols, stream);
}

template <typename T>
void dropout(const T* x, T* y, std::int64_t n, double p, std::uint64_t seed, std::uint64_t rng_stream, Stream stream) {
  if (n <= 0) return;
  // The scalars exactly as the CPU spec computes them (on the host).
  const acc_t<T> keep_scale = static_cast<acc_t<T>>(1.0 / (1.0 - p));
  const float threshold = static_cast<float>(p);
  dropout_kernel<T><<<launch::blocks_for((n + 3) / 4), launch::kThreads, 0, stream>>>(x, y, n, threshold, keep_scale,
                                                                                      seed, rng_stream);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void sum_squares(const T* x, std::int64_t n, double* partials, double* result, Stream stream) {
  const std::int64_t blocks = sum_squares_blocks(n);
  if (blocks > 0) {
    sum_squares_blocks_kernel<T><<<static_cast<unsigned>(blocks), kSumSquaresThreads, 0, stream>>>(x, n, partials);
    DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  }
  sum_in_order_kernel<<<1, 1, 0, stream>>>(partials, blocks, result);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

#define DRAGOMAN_INSTANTIATE(T)                                                                       \
  template void add<T>(const T*, const T*, T*, std::int64_t, Stream);                                 \
  template void accumulate<T>(T*, const T*, std::int64_t, Stream);                                    \
  template void scale<T>(T*, acc_t<T>, std::int64_t, Stream);                                         \
  template void relu_forward<T>(const T*, T*, std::int64_t, Stream);                                  \
  template void relu_backward<T>(const T*, const T*, T*, std::int64_t, Stream);                       \
  template void swish_forward<T>(const T*, T*, std::int64_t, Stream);                                 \
  template void swish_backward<T>(const T*, const T*, T*, std::int64_t, Stream);                      \
  template void bias_add<T>(T*, const T*, std::int64_t, std::int64_t, Stream);                        \
  template void bias_backward<T>(const T*, acc_t<T>*, std::int64_t, std::int64_t, acc_t<T>*, Stream); \
  template void dropout<T>(const T*, T*, std::int64_t, double, std::uint64_t, std::uint64_t, Stream); \
  template void sum_squares<T>(const T*, std::int64_t, double*, double*, Stream);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cuda
