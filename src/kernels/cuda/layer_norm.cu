// Layer normalisation on CUDA (see layer_norm.h): rows one warp each, parameter gradients in two
// passes of column sums. Compiled without FMA contraction (src/CMakeLists.txt), so each formula of
// kernels/common/layer_norm.h rounds as on the CPU.
#include "kernels/cuda/layer_norm.h"

#include "kernels/common/layer_norm.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/column_sums.cuh"

namespace dragoman::cuda {
namespace {

constexpr unsigned kWarpsPerBlock = 4;  // rows per block of the row kernels

// The sum of v over the warp's 32 lanes, in every lane: a butterfly, so each lane adds the same
// pairs (a + b == b + a) and all lanes hold the same bits.
template <typename A>
__device__ inline A warp_sum(A v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
}

template <typename T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    layer_norm_forward_kernel(const T* x, const T* weight, const T* bias, T* y, acc_t<T>* mean, acc_t<T>* rstd,
                              std::int64_t rows, std::int64_t d, acc_t<T> eps) {
  using A = acc_t<T>;
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;  // a whole warp leaves together
  const int lane = static_cast<int>(threadIdx.x % 32);
  const T* xr = x + r * d;
  const A n = static_cast<A>(d);
  A sum = 0;
  for (std::int64_t i = lane; i < d; i += 32) sum += load(xr[i]);
  const A mu = warp_sum(sum) / n;
  A sq = 0;
  for (std::int64_t i = lane; i < d; i += 32) {
    const A t = load(xr[i]) - mu;
    sq += t * t;
  }
  const A rs = A(1) / sqrt(warp_sum(sq) / n + eps);
  T* yr = y + r * d;
  for (std::int64_t i = lane; i < d; i += 32) {
    yr[i] = store<T>(common::layer_norm_output(load(xr[i]), mu, rs, load(weight[i]), load(bias[i])));
  }
  if (lane == 0) {
    mean[r] = mu;
    rstd[r] = rs;
  }
}

template <typename T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    layer_norm_dx_kernel(const T* dy, const T* x, const T* weight, const acc_t<T>* mean, const acc_t<T>* rstd, T* dx,
                         std::int64_t rows, std::int64_t d) {
  using A = acc_t<T>;
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const T* dyr = dy + r * d;
  const T* xr = x + r * d;
  const A mu = mean[r], rs = rstd[r], n = static_cast<A>(d);
  A g_sum = 0, gx_sum = 0;
  for (std::int64_t i = lane; i < d; i += 32) {
    const A xhat = common::layer_norm_xhat(load(xr[i]), mu, rs);
    const A g = load(dyr[i]) * load(weight[i]);
    g_sum += g;
    gx_sum += g * xhat;
  }
  const A g_mean = warp_sum(g_sum) / n, gx_mean = warp_sum(gx_sum) / n;
  T* dxr = dx + r * d;
  for (std::int64_t i = lane; i < d; i += 32) {
    const A xhat = common::layer_norm_xhat(load(xr[i]), mu, rs);
    dxr[i] = store<T>(common::layer_norm_dx(load(dyr[i]), load(weight[i]), xhat, rs, g_mean, gx_mean));
  }
}

// Pass 1 of the parameter gradients: the chunk's rows in order, for column c (column_sums.cuh).
//   workspace: dweight partials [chunks, D], then dbias partials [chunks, D]
template <typename T>
__global__ void layer_norm_param_chunks_kernel(const T* dy, const T* x, const acc_t<T>* mean, const acc_t<T>* rstd,
                                               acc_t<T>* workspace, std::int64_t rows, std::int64_t d) {
  using A = acc_t<T>;
  std::int64_t c, r0, r1;
  if (!column_chunk(rows, d, c, r0, r1)) return;
  A dw = 0, db = 0;
#pragma unroll 8
  for (std::int64_t r = r0; r < r1; ++r) {
    const A g = load(dy[r * d + c]);
    dw += common::layer_norm_dweight_term(g, load(x[r * d + c]), mean[r], rstd[r]);
    db += g;
  }
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * d + c;
  workspace[at] = dw;
  workspace[static_cast<std::int64_t>(gridDim.x) * d + at] = db;  // gridDim.x: the chunk count
}

unsigned row_blocks(std::int64_t rows) { return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock); }

}  // namespace

template <typename T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, acc_t<T>* mean, acc_t<T>* rstd,
                        std::int64_t rows, std::int64_t d, double eps, Stream stream) {
  if (rows <= 0 || d <= 0) return;
  layer_norm_forward_kernel<T><<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(
      x, weight, bias, y, mean, rstd, rows, d, static_cast<acc_t<T>>(eps));
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* weight, const acc_t<T>* mean, const acc_t<T>* rstd, T* dx,
                         acc_t<T>* dweight, acc_t<T>* dbias, std::int64_t rows, std::int64_t d, acc_t<T>* workspace,
                         Stream stream) {
  if (rows <= 0 || d <= 0) return;
  layer_norm_dx_kernel<T><<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(dy, x, weight, mean, rstd, dx, rows, d);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  layer_norm_param_chunks_kernel<T>
      <<<column_sum_grid(rows, d), kColumnSumThreads, 0, stream>>>(dy, x, mean, rstd, workspace, rows, d);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  const std::int64_t chunks = column_sum_chunks(rows);
  add_chunk_sums(workspace, dweight, chunks, d, stream);
  add_chunk_sums(workspace + chunks * d, dbias, chunks, d, stream);
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                       \
  template void layer_norm_forward<T>(const T*, const T*, const T*, T*, acc_t<T>*, acc_t<T>*, std::int64_t,           \
                                      std::int64_t, double, Stream);                                                  \
  template void layer_norm_backward<T>(const T*, const T*, const T*, const acc_t<T>*, const acc_t<T>*, T*, acc_t<T>*, \
                                       acc_t<T>*, std::int64_t, std::int64_t, acc_t<T>*, Stream);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cuda
