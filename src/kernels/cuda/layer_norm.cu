// Layer normalisation on CUDA (see layer_norm.h): rows one warp each, parameter gradients in two
// passes of column sums. Compiled without FMA contraction (src/CMakeLists.txt), so each formula of
// kernels/common/layer_norm.h rounds as on the CPU.
#include "kernels/layer_norm.h"

#include <cstdint>
#include <initializer_list>

#include "base/philox.h"
#include "device/cuda/check.h"
#include "kernels/common/dropout.h"
#include "kernels/common/layer_norm.h"
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/pack.cuh"

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

// ---- Rows held in registers -------------------------------------------------------------------
// For rows of at most 32 * kMaxPacks Packs of 16 bytes (pack.cuh: 1,024 bf16/f16, 512 floats, 256
// doubles; 8 packs spilled registers in the f16 forward) whose every row starts 16-byte aligned:
// each lane loads its packs once (pack p of lane l holds elements (32 p + l) * kPack ... + kPack - 1),
// keeps them in registers for both sums and the output, and stores its outputs 16 bytes at a time. The same formulas;
// the row sums run over the lane's elements in that order, then the butterfly: another fixed order, as the header
// allows.

constexpr int kMaxPacks = 4;  // (the launches below take 1, 2 and kMaxPacks)

// Whether the lane's pack p lies in a row of d elements.
template <typename T>
__device__ inline bool pack_inside(int p, int lane, std::int64_t d) {
  return (static_cast<std::int64_t>(p) * 32 + lane + 1) * Pack<T>::kSize <= d;
}

template <typename T, int kPacks>
__device__ inline void load_row(const T* row, std::int64_t d, int lane, acc_t<T> (&out)[kPacks * Pack<T>::kSize]) {
  constexpr int kPack = Pack<T>::kSize;
  const auto* packs = reinterpret_cast<const Pack<T>*>(row);
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    Pack<T> v{};
    if (pack_inside<T>(p, lane, d)) v = packs[p * 32 + lane];
#pragma unroll
    for (int j = 0; j < kPack; ++j) out[p * kPack + j] = load(v.v[j]);  // (zeros past the row: never summed)
  }
}

// dropout's arguments as the kernel takes them: cuda::dropout's scalars, computed the same way.
template <typename T>
struct KernelDropout {
  T* dropped = nullptr;
  float threshold = 0;
  acc_t<T> keep_scale = 1;
  std::uint64_t seed = 0, rng_stream = 0;
};

// Writes the lane's packs of the row starting at element `first` of `out`, 16 bytes at a time:
// element j of pack p is v(p * kPack + j, its column) (acc_t<T>) rounded to T. With drop.dropped
// (layer norm's dx), also the dropout of those T values into drop.dropped, pack by pack: element i
// of the tensor takes lane i % 4 of Philox block i / 4 (dropout's indexing). A pack starts at an
// even element (2, 4 or 8 elements, first a multiple of the pack), so a new block begins at j = 0
// or j % 4 == 0 only.
template <typename T, int kPacks, typename F>
__device__ inline void store_row(T* out, std::int64_t first, std::int64_t d, int lane, F v,
                                 const KernelDropout<T>& drop = {}) {
  constexpr int kPack = Pack<T>::kSize;
  auto* packs = reinterpret_cast<Pack<T>*>(out + first);
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (!pack_inside<T>(p, lane, d)) continue;
    const std::int64_t at = static_cast<std::int64_t>(p) * 32 + lane;
    Pack<T> o;
#pragma unroll
    for (int j = 0; j < kPack; ++j) o.v[j] = store<T>(v(p * kPack + j, at * kPack + j));
    packs[at] = o;
    if (drop.dropped == nullptr) continue;
    const std::int64_t i0 = first + at * kPack;
    philox::Block bits{};
#pragma unroll
    for (int j = 0; j < kPack; ++j) {
      const std::int64_t i = i0 + j;
      if (j % 4 == 0) bits = philox::block_bits(drop.seed, drop.rng_stream, static_cast<std::uint64_t>(i / 4));
      // i % 4: j % 4 for packs of 4 or 8 (i0 a multiple of 4), known at compile time; selected
      // rather than indexed for double's packs of 2, so the block stays in registers.
      const int k = kPack >= 4 ? j % 4 : static_cast<int>(i % 4);
      const std::uint32_t b = k == 0 ? bits.v[0] : k == 1 ? bits.v[1] : k == 2 ? bits.v[2] : bits.v[3];
      o.v[j] = common::dropout_element(o.v[j], b, drop.threshold, drop.keep_scale);
    }
    reinterpret_cast<Pack<T>*>(drop.dropped + first)[at] = o;
  }
}

template <typename T, int kPacks>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    layer_norm_forward_rows_kernel(const T* x, const T* weight, const T* bias, T* y, acc_t<T>* mean, acc_t<T>* rstd,
                                   std::int64_t rows, std::int64_t d, acc_t<T> eps) {
  using A = acc_t<T>;
  constexpr int kPack = Pack<T>::kSize;
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;  // a whole warp leaves together
  const int lane = static_cast<int>(threadIdx.x % 32);
  A v[kPacks * kPack];
  load_row<T, kPacks>(x + r * d, d, lane, v);
  const auto inside = [&](int p) { return pack_inside<T>(p, lane, d); };
  const A n = static_cast<A>(d);
  A sum = 0;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (!inside(p)) continue;
#pragma unroll
    for (int j = 0; j < kPack; ++j) sum += v[p * kPack + j];
  }
  const A mu = warp_sum(sum) / n;
  A sq = 0;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (!inside(p)) continue;
#pragma unroll
    for (int j = 0; j < kPack; ++j) {
      const A t = v[p * kPack + j] - mu;
      sq += t * t;
    }
  }
  const A rs = A(1) / sqrt(warp_sum(sq) / n + eps);
  store_row<T, kPacks>(y, r * d, d, lane, [&](int k, std::int64_t c) {
    return common::layer_norm_output(v[k], mu, rs, load(weight[c]), load(bias[c]));
  });
  if (lane == 0) {
    mean[r] = mu;
    rstd[r] = rs;
  }
}

template <typename T, int kPacks>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    layer_norm_dx_rows_kernel(const T* dy, const T* x, const T* weight, const acc_t<T>* mean, const acc_t<T>* rstd,
                              T* dx, std::int64_t rows, std::int64_t d, KernelDropout<T> drop) {
  using A = acc_t<T>;
  constexpr int kPack = Pack<T>::kSize;
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const int lane = static_cast<int>(threadIdx.x % 32);
  A g_in[kPacks * kPack], xv[kPacks * kPack];
  load_row<T, kPacks>(dy + r * d, d, lane, g_in);
  load_row<T, kPacks>(x + r * d, d, lane, xv);
  const auto inside = [&](int p) { return pack_inside<T>(p, lane, d); };
  const A mu = mean[r], rs = rstd[r], n = static_cast<A>(d);
  A g_sum = 0, gx_sum = 0;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (!inside(p)) continue;
#pragma unroll
    for (int j = 0; j < kPack; ++j) {
      const std::int64_t c = (static_cast<std::int64_t>(p) * 32 + lane) * kPack + j;
      const A xhat = common::layer_norm_xhat(xv[p * kPack + j], mu, rs);
      const A g = g_in[p * kPack + j] * load(weight[c]);
      g_sum += g;
      gx_sum += g * xhat;
    }
  }
  const A g_mean = warp_sum(g_sum) / n, gx_mean = warp_sum(gx_sum) / n;
  store_row<T, kPacks>(
      dx, r * d, d, lane,
      [&](int k, std::int64_t c) {
        return common::layer_norm_dx(g_in[k], load(weight[c]), common::layer_norm_xhat(xv[k], mu, rs), rs, g_mean,
                                     gx_mean);
      },
      drop);
}

// The packs a lane needs for rows of d elements on the register path (1, 2 or kMaxPacks), or 0
// when the rows take the element kernels (d not a whole number of packs, a row too long, or a
// pointer off 16-byte alignment).
template <typename T>
int row_packs(std::int64_t d, std::initializer_list<const void*> pointers) {
  constexpr int kPack = Pack<T>::kSize;
  if (d % kPack != 0 || d > std::int64_t{32} * kPack * kMaxPacks) return 0;
  for (const void* p : pointers) {
    if (!packable<T>(p)) return 0;
  }
  const std::int64_t packs = (d / kPack + 31) / 32;
  for (int k = 1; k <= kMaxPacks; k *= 2) {
    if (packs <= k) return k;
  }
  return 0;
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
  const acc_t<T> e = static_cast<acc_t<T>>(eps);
  const unsigned blocks = row_blocks(rows), threads = kWarpsPerBlock * 32;
  switch (row_packs<T>(d, {x, y})) {
    case 1:
      layer_norm_forward_rows_kernel<T, 1><<<blocks, threads, 0, stream>>>(x, weight, bias, y, mean, rstd, rows, d, e);
      break;
    case 2:
      layer_norm_forward_rows_kernel<T, 2><<<blocks, threads, 0, stream>>>(x, weight, bias, y, mean, rstd, rows, d, e);
      break;
    case kMaxPacks:
      layer_norm_forward_rows_kernel<T, kMaxPacks>
          <<<blocks, threads, 0, stream>>>(x, weight, bias, y, mean, rstd, rows, d, e);
      break;
    default: layer_norm_forward_kernel<T><<<blocks, threads, 0, stream>>>(x, weight, bias, y, mean, rstd, rows, d, e);
  }
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* weight, const acc_t<T>* mean, const acc_t<T>* rstd, T* dx,
                         acc_t<T>* dweight, acc_t<T>* dbias, std::int64_t rows, std::int64_t d, acc_t<T>* workspace,
                         Stream stream, const DxDropout<T>& dx_dropout) {
  if (rows <= 0 || d <= 0) return;
  const unsigned blocks = row_blocks(rows), threads = kWarpsPerBlock * 32;
  const int packs = row_packs<T>(d, {dy, x, dx});
  KernelDropout<T> fused;  // the register path writes the dropout too where its output is 16-byte aligned
  if (dx_dropout.dropped != nullptr && packs > 0 && packable<T>(dx_dropout.dropped)) {
    // the scalars exactly as cuda::dropout computes them
    fused = {dx_dropout.dropped, static_cast<float>(dx_dropout.p), static_cast<acc_t<T>>(1.0 / (1.0 - dx_dropout.p)),
             dx_dropout.seed, dx_dropout.rng_stream};
  }
  switch (packs) {
    case 1:
      layer_norm_dx_rows_kernel<T, 1><<<blocks, threads, 0, stream>>>(dy, x, weight, mean, rstd, dx, rows, d, fused);
      break;
    case 2:
      layer_norm_dx_rows_kernel<T, 2><<<blocks, threads, 0, stream>>>(dy, x, weight, mean, rstd, dx, rows, d, fused);
      break;
    case kMaxPacks:
      layer_norm_dx_rows_kernel<T, kMaxPacks>
          <<<blocks, threads, 0, stream>>>(dy, x, weight, mean, rstd, dx, rows, d, fused);
      break;
    default: layer_norm_dx_kernel<T><<<blocks, threads, 0, stream>>>(dy, x, weight, mean, rstd, dx, rows, d);
  }
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  if (dx_dropout.dropped != nullptr && fused.dropped == nullptr) {
    dropout(dx, dx_dropout.dropped, rows * d, dx_dropout.p, dx_dropout.seed, dx_dropout.rng_stream, stream);
  }
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
                                       acc_t<T>*, std::int64_t, std::int64_t, acc_t<T>*, Stream, const DxDropout<T>&);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cuda
