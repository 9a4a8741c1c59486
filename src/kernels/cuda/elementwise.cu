// Element-wise CUDA kernels (see elementwise.h): grid-stride loops over 16-byte packs of elements
// where the pointers allow (one element at a time otherwise, and for the remainder); the
// column sums of bias_backward in two passes with a fixed order; the sum of squares per 2^16-element
// block. Compiled without FMA contraction (src/CMakeLists.txt), so a * b + c rounds twice as on the CPU.
#include "kernels/elementwise.h"

#include <cstddef>
#include <cstdint>

#include "base/philox.h"
#include "device/cuda/check.h"
#include "kernels/common/activation.h"
#include "kernels/common/clip.h"
#include "kernels/common/dropout.h"
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/pack.cuh"

namespace dragoman::cuda {
namespace {

using launch::first_index;
using launch::grid_stride;

// y[i] = op(x[i]) for i < n: whole packs first when `packed`, then the remaining elements one by one.
template <typename T, typename Op>
__global__ void map1_kernel(const T* x, T* y, std::int64_t n, bool packed, Op op) {
  std::int64_t done = 0;
  if (packed) {
    const std::int64_t packs = n / Pack<T>::kSize;
    const auto* px = reinterpret_cast<const Pack<T>*>(x);
    auto* py = reinterpret_cast<Pack<T>*>(y);
    for (std::int64_t p = first_index(); p < packs; p += grid_stride()) {
      const Pack<T> a = px[p];
      Pack<T> r;
#pragma unroll
      for (int j = 0; j < Pack<T>::kSize; ++j) r.v[j] = op(a.v[j]);
      py[p] = r;
    }
    done = packs * Pack<T>::kSize;
  }
  for (std::int64_t i = done + first_index(); i < n; i += grid_stride()) y[i] = op(x[i]);
}

// y[i] = op(x0[i], x1[i]) for i < n (y may be x0: each element is read before it is written).
template <typename T, typename Op>
__global__ void map2_kernel(const T* x0, const T* x1, T* y, std::int64_t n, bool packed, Op op) {
  std::int64_t done = 0;
  if (packed) {
    const std::int64_t packs = n / Pack<T>::kSize;
    const auto* p0 = reinterpret_cast<const Pack<T>*>(x0);
    const auto* p1 = reinterpret_cast<const Pack<T>*>(x1);
    auto* py = reinterpret_cast<Pack<T>*>(y);
    for (std::int64_t p = first_index(); p < packs; p += grid_stride()) {
      const Pack<T> a = p0[p], b = p1[p];
      Pack<T> r;
#pragma unroll
      for (int j = 0; j < Pack<T>::kSize; ++j) r.v[j] = op(a.v[j], b.v[j]);
      py[p] = r;
    }
    done = packs * Pack<T>::kSize;
  }
  for (std::int64_t i = done + first_index(); i < n; i += grid_stride()) y[i] = op(x0[i], x1[i]);
}

template <typename T, typename Op>
void map1(const T* x, T* y, std::int64_t n, Op op, Stream stream) {
  if (n <= 0) return;
  const bool packed = packable<T>(x) && packable<T>(y);
  map1_kernel<T, Op>
      <<<launch::blocks_for(packed ? n / Pack<T>::kSize + 1 : n), launch::kThreads, 0, stream>>>(x, y, n, packed, op);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename Op>
void map2(const T* x0, const T* x1, T* y, std::int64_t n, Op op, Stream stream) {
  if (n <= 0) return;
  const bool packed = packable<T>(x0) && packable<T>(x1) && packable<T>(y);
  map2_kernel<T, Op><<<launch::blocks_for(packed ? n / Pack<T>::kSize + 1 : n), launch::kThreads, 0, stream>>>(
      x0, x1, y, n, packed, op);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

struct AddOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return store<T>(load(a) + load(b));
  }
};

template <typename A>
struct ScaleOp {
  A s;
  template <typename T>
  __device__ T operator()(T y) const {
    return store<T>(load(y) * s);
  }
};

struct ReluOp {
  template <typename T>
  __device__ T operator()(T x) const {
    return load(x) > 0 ? x : T();
  }
};

// (y, dy): dy where the forward output y is positive.
struct ReluBackwardOp {
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return load(y) > 0 ? dy : T();
  }
};

struct SwishOp {
  template <typename T>
  __device__ T operator()(T x) const {
    return common::swish_element(x);
  }
};

struct SwishBackwardOp {
  template <typename T>
  __device__ T operator()(T x, T dy) const {
    return common::swish_backward_element(x, dy);
  }
};

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
#pragma unroll 16
  for (std::int64_t r = r0; r < r1; ++r) sum += load(dy[r * cols + c]);
  workspace[static_cast<std::int64_t>(blockIdx.x) * cols + c] = sum;
}

// The 4 elements of one Philox block, loaded and stored together (8 bytes for bf16/f16).
template <typename T>
struct alignas(4 * sizeof(T) < 16 ? 4 * sizeof(T) : 16) Quad {
  T v[4];
};

template <typename T>
__global__ void dropout_kernel(const T* x, T* y, std::int64_t n, bool packed, float threshold, acc_t<T> keep_scale,
                               std::uint64_t seed, std::uint64_t rng_stream) {
  const std::int64_t blocks = (n + 3) / 4;  // element i is philox::uniform(seed, rng_stream, i)
  for (std::int64_t b = first_index(); b < blocks; b += grid_stride()) {
    const philox::Block r = philox::block_bits(seed, rng_stream, static_cast<std::uint64_t>(b));
    if (packed && 4 * b + 3 < n) {
      const Quad<T> in = reinterpret_cast<const Quad<T>*>(x)[b];
      Quad<T> out;
#pragma unroll
      for (int j = 0; j < 4; ++j) out.v[j] = common::dropout_element(in.v[j], r.v[j], threshold, keep_scale);
      reinterpret_cast<Quad<T>*>(y)[b] = out;
      continue;
    }
    for (int j = 0; j < 4 && 4 * b + j < n; ++j) {
      const std::int64_t i = 4 * b + j;
      y[i] = common::dropout_element(x[i], r.v[j], threshold, keep_scale);
    }
  }
}

// out = x + dropout(y): dropout_kernel's Philox blocks and packs, with the sum in the same pass.
template <typename T>
__global__ void dropout_add_kernel(const T* x, const T* y, T* out, std::int64_t n, bool packed, float threshold,
                                   acc_t<T> keep_scale, std::uint64_t seed, std::uint64_t rng_stream) {
  const std::int64_t blocks = (n + 3) / 4;  // element i is philox::uniform(seed, rng_stream, i)
  for (std::int64_t b = first_index(); b < blocks; b += grid_stride()) {
    const philox::Block r = philox::block_bits(seed, rng_stream, static_cast<std::uint64_t>(b));
    if (packed && 4 * b + 3 < n) {
      const Quad<T> in_x = reinterpret_cast<const Quad<T>*>(x)[b];
      const Quad<T> in_y = reinterpret_cast<const Quad<T>*>(y)[b];
      Quad<T> sum;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        sum.v[j] = common::dropout_add_element(in_x.v[j], in_y.v[j], r.v[j], threshold, keep_scale);
      }
      reinterpret_cast<Quad<T>*>(out)[b] = sum;
      continue;
    }
    for (int j = 0; j < 4 && 4 * b + j < n; ++j) {
      const std::int64_t i = 4 * b + j;
      out[i] = common::dropout_add_element(x[i], y[i], r.v[j], threshold, keep_scale);
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

__global__ void norm_factor_kernel(const double* sum_squares, double clip_norm, double loss_scale, double* out) {
  const common::NormFactor r = common::norm_factor(*sum_squares, clip_norm, loss_scale);
  out[0] = r.norm;
  out[1] = r.factor;
}

__global__ void sum_in_order_kernel(const double* partials, std::int64_t count, double* result) {
  double total = 0;
  for (std::int64_t k = 0; k < count; ++k) total += partials[k];
  *result = total;
}

}  // namespace

template <typename T>
void add(const T* a, const T* b, T* y, std::int64_t n, Stream stream) {
  map2(a, b, y, n, AddOp{}, stream);
}

template <typename T>
void accumulate(T* y, const T* x, std::int64_t n, Stream stream) {
  map2(static_cast<const T*>(y), x, y, n, AddOp{}, stream);
}

template <typename T>
void scale(T* y, acc_t<T> s, std::int64_t n, Stream stream) {
  map1(static_cast<const T*>(y), y, n, ScaleOp<acc_t<T>>{s}, stream);
}

template <typename T>
void relu_forward(const T* x, T* y, std::int64_t n, Stream stream) {
  map1(x, y, n, ReluOp{}, stream);
}

template <typename T>
void relu_backward(const T* y, const T* dy, T* dx, std::int64_t n, Stream stream) {
  map2(y, dy, dx, n, ReluBackwardOp{}, stream);
}

template <typename T>
void swish_forward(const T* x, T* y, std::int64_t n, Stream stream) {
  map1(x, y, n, SwishOp{}, stream);
}

template <typename T>
void swish_backward(const T* x, const T* dy, T* dx, std::int64_t n, Stream stream) {
  map2(x, dy, dx, n, SwishBackwardOp{}, stream);
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
  const bool packed = aligned(x, alignof(Quad<T>)) && aligned(y, alignof(Quad<T>));
  dropout_kernel<T><<<launch::blocks_for((n + 3) / 4), launch::kThreads, 0, stream>>>(x, y, n, packed, threshold,
                                                                                      keep_scale, seed, rng_stream);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void dropout_add(const T* x, const T* y, T* out, std::int64_t n, double p, std::uint64_t seed, std::uint64_t rng_stream,
                 Stream stream) {
  if (n <= 0) return;
  const acc_t<T> keep_scale = static_cast<acc_t<T>>(1.0 / (1.0 - p));  // as dropout computes them
  const float threshold = static_cast<float>(p);
  const bool packed = aligned(x, alignof(Quad<T>)) && aligned(y, alignof(Quad<T>)) && aligned(out, alignof(Quad<T>));
  dropout_add_kernel<T><<<launch::blocks_for((n + 3) / 4), launch::kThreads, 0, stream>>>(
      x, y, out, n, packed, threshold, keep_scale, seed, rng_stream);
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

void norm_factor(const double* sum_squares, double clip_norm, double loss_scale, double* out, Stream stream) {
  norm_factor_kernel<<<1, 1, 0, stream>>>(sum_squares, clip_norm, loss_scale, out);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                     \
  template void add<T>(const T*, const T*, T*, std::int64_t, Stream);                                               \
  template void accumulate<T>(T*, const T*, std::int64_t, Stream);                                                  \
  template void scale<T>(T*, acc_t<T>, std::int64_t, Stream);                                                       \
  template void relu_forward<T>(const T*, T*, std::int64_t, Stream);                                                \
  template void relu_backward<T>(const T*, const T*, T*, std::int64_t, Stream);                                     \
  template void swish_forward<T>(const T*, T*, std::int64_t, Stream);                                               \
  template void swish_backward<T>(const T*, const T*, T*, std::int64_t, Stream);                                    \
  template void bias_add<T>(T*, const T*, std::int64_t, std::int64_t, Stream);                                      \
  template void bias_backward<T>(const T*, acc_t<T>*, std::int64_t, std::int64_t, acc_t<T>*, Stream);               \
  template void dropout<T>(const T*, T*, std::int64_t, double, std::uint64_t, std::uint64_t, Stream);               \
  template void dropout_add<T>(const T*, const T*, T*, std::int64_t, double, std::uint64_t, std::uint64_t, Stream); \
  template void sum_squares<T>(const T*, std::int64_t, double*, double*, Stream);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cuda
