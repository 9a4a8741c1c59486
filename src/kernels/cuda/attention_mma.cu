// Attention on tensor cores for up to 64 queries and 64 keys a (batch, head) (see attention_mma.h):
// one block of 4 warps per (b, h), every operand in shared memory, WMMA's 16 x 16 x 16 bf16/f16
// tiles with float accumulators for the six products, the softmax and dscore on CUDA cores.
#include "kernels/cuda/attention_mma.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_mma.cuh"
#if !defined(DRAGOMAN_CUDA_EMULATION)  // (tests/emulated_cuda/emulated_cuda.h has the launch)
#include "device/cuda/check.h"
#include "kernels/cuda/attention_launch.cuh"
#endif

namespace dragoman::cuda::attention_detail {
namespace {

using mma::block_product;
using mma::copy_rows;
using mma::kThreads;
using mma::kTile;
using mma::kWarps;
using mma::round_tile;
using mma::store_rows;
using mma::take;
using mma::warp_max;
using mma::warp_sum;

constexpr int kMaxRows = 64;  // queries and keys of a (b, h): two keys a lane in the softmax

// Where each array of a block lives in its dynamic shared memory (byte offsets, each 128-byte
// aligned), and the rows' pitches: elements of T for q, k, v, dout, p, ds (padded by 8: 16 bytes, so
// that the rows of a WMMA tile fall in different banks), floats for the scores, dprob and the output
// staging (padded by 4).
struct Layout {
  int tp = 0, sp = 0;  // queries and keys rounded up to whole tiles
  int ldk = 0, ldv = 0, lds = 0, ldp = 0, ldo = 0;
  int q = 0, k = 0, v = 0, dout = 0, s = 0, dp = 0, p = 0, ds = 0, o = 0, rows = 0;
  int bytes = 0;
};

__host__ __device__ inline Layout layout_of(const AttentionShape& a, bool backward) {
  Layout l;
  const int K = static_cast<int>(a.key_size), Kv = static_cast<int>(a.value_size);
  l.tp = round_tile(a.queries);
  l.sp = round_tile(a.keys);
  l.ldk = K + 8;
  l.ldv = Kv + 8;
  l.lds = l.sp + 4;
  l.ldp = l.sp + 8;
  l.ldo = (K > Kv ? K : Kv) + 4;
  constexpr int e = 2;  // bytes of T
  int at = 0;
  l.q = take(at, l.tp * l.ldk * e);
  l.k = take(at, l.sp * l.ldk * e);
  l.v = take(at, l.sp * l.ldv * e);
  if (backward) l.dout = take(at, l.tp * l.ldv * e);
  l.s = take(at, l.tp * l.lds * 4);
  if (backward) l.dp = take(at, l.tp * l.lds * 4);
  l.p = take(at, l.tp * l.ldp * e);
  if (backward) l.ds = take(at, l.tp * l.ldp * e);
  l.o = take(at, (l.tp > l.sp ? l.tp : l.sp) * l.ldo * 4);
  l.rows = take(at, 2 * l.tp * 4);
  l.bytes = at;
  return l;
}

// Block (b, h): out and lse of every query.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    mma_forward_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                       float scale, Dropout<float> drop, float* lse, T* out) {
#if DRAGOMAN_WMMA_KERNELS
  DRAGOMAN_DYNAMIC_SHARED(mma_shared);
  const Layout L = layout_of(a, false);
  T* Qs = reinterpret_cast<T*>(mma_shared + L.q);
  T* Ks = reinterpret_cast<T*>(mma_shared + L.k);
  T* Vs = reinterpret_cast<T*>(mma_shared + L.v);
  float* Ss = reinterpret_cast<float*>(mma_shared + L.s);
  T* Ps = reinterpret_cast<T*>(mma_shared + L.p);
  float* Os = reinterpret_cast<float*>(mma_shared + L.o);
  float* row_sum = reinterpret_cast<float*>(mma_shared + L.rows);
  const int K = static_cast<int>(a.key_size), Kv = static_cast<int>(a.value_size);
  const std::int64_t Tq = a.queries, S = a.keys, bh = blockIdx.x, b = bh / a.heads, h = bh % a.heads;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const std::int32_t length = key_lengths[b];
  const std::int64_t n_max = visible_keys(a, length, Tq - 1);  // the most keys any query sees
  copy_rows(Qs, L.ldk, q + b * a.q_batch_stride + h * K, a.q_row_stride, Tq, L.tp, K);
  copy_rows(Ks, L.ldk, k + b * a.k_batch_stride + h * K, a.k_row_stride, n_max, L.sp, K);
  copy_rows(Vs, L.ldv, v + b * a.v_batch_stride + h * Kv, a.v_row_stride, n_max, L.sp, Kv);
  __syncthreads();
  block_product<T, false, true>(Qs, L.ldk, Ks, L.ldk, Ss, L.lds, L.tp, L.sp, K);  // Q K^T
  __syncthreads();
  // Each warp a query row at a time, each lane keys lane and lane + 32: the probabilities (dropped,
  // rounded to T) into Ps, zeros where masked and in the padding; the sum of the undropped ones.
  for (int t = warp; t < L.tp; t += kWarps) {
    const std::int64_t n = t < Tq ? visible_keys(a, length, t) : 0;
    float x[2], m = -INFINITY;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int s = lane + 32 * u;
      x[u] = s < n ? Ss[t * L.lds + s] * scale : -INFINITY;
      m = fmaxf(m, x[u]);
    }
    m = warp_max(m);
    float sum = 0.f;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int s = lane + 32 * u;
      float p = 0.f, dropped = 0.f;
      if (s < n) {
        p = exp_acc(x[u] - m);
        dropped = p * drop.mask((bh * Tq + t) * S + s);
      }
      sum += p;
      if (s < L.sp) Ps[t * L.ldp + s] = store<T>(dropped);
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      row_sum[t] = n > 0 ? sum : 1.f;  // a query that sees no key: out 0, lse 0
      if (lse != nullptr && t < Tq) lse[bh * Tq + t] = n > 0 ? m + log_acc(sum) : 0.f;
    }
  }
  __syncthreads();
  block_product<T, false, false>(Ps, L.ldp, Vs, L.ldv, Os, L.ldo, L.tp, Kv, L.sp);  // P V
  __syncthreads();
  store_rows(out + b * a.out_batch_stride + h * Kv, a.out_row_stride, Os, L.ldo, Tq, Kv, row_sum);
#elif defined(__CUDA_ARCH__)
  __trap();  // compiled for an architecture without bf16 WMMA (mma_attention_takes refuses below sm_80)
#endif
}

// Block (b, h): dq of every query, dk and dv of every key.
template <typename T>
__global__ void __launch_bounds__(kThreads, 1)
    mma_backward_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                        float scale, Dropout<float> drop, const float* lse, const T* dout, T* dq, T* dk, T* dv) {
#if DRAGOMAN_WMMA_KERNELS
  DRAGOMAN_DYNAMIC_SHARED(mma_shared);
  const Layout L = layout_of(a, true);
  T* Qs = reinterpret_cast<T*>(mma_shared + L.q);
  T* Ks = reinterpret_cast<T*>(mma_shared + L.k);
  T* Vs = reinterpret_cast<T*>(mma_shared + L.v);
  T* DOs = reinterpret_cast<T*>(mma_shared + L.dout);
  float* Ss = reinterpret_cast<float*>(mma_shared + L.s);
  float* DPs = reinterpret_cast<float*>(mma_shared + L.dp);
  T* Ps = reinterpret_cast<T*>(mma_shared + L.p);
  T* DSs = reinterpret_cast<T*>(mma_shared + L.ds);
  float* staging = reinterpret_cast<float*>(mma_shared + L.o);
  float* row_lse = reinterpret_cast<float*>(mma_shared + L.rows);
  const int K = static_cast<int>(a.key_size), Kv = static_cast<int>(a.value_size);
  const std::int64_t Tq = a.queries, S = a.keys, bh = blockIdx.x, b = bh / a.heads, h = bh % a.heads;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const std::int32_t length = key_lengths[b];
  const std::int64_t n_max = visible_keys(a, length, Tq - 1);
  copy_rows(Qs, L.ldk, q + b * a.q_batch_stride + h * K, a.q_row_stride, Tq, L.tp, K);
  copy_rows(DOs, L.ldv, dout + b * a.out_batch_stride + h * Kv, a.out_row_stride, Tq, L.tp, Kv);
  copy_rows(Ks, L.ldk, k + b * a.k_batch_stride + h * K, a.k_row_stride, n_max, L.sp, K);
  copy_rows(Vs, L.ldv, v + b * a.v_batch_stride + h * Kv, a.v_row_stride, n_max, L.sp, Kv);
  for (int t = static_cast<int>(threadIdx.x); t < L.tp; t += kThreads) row_lse[t] = t < Tq ? lse[bh * Tq + t] : 0.f;
  __syncthreads();
  block_product<T, false, true>(Qs, L.ldk, Ks, L.ldk, Ss, L.lds, L.tp, L.sp, K);     // Q K^T
  block_product<T, false, true>(DOs, L.ldv, Vs, L.ldv, DPs, L.lds, L.tp, L.sp, Kv);  // dout V^T
  __syncthreads();
  // Each warp a query row at a time: p from the forward's lse, dprob times the dropout factor,
  // delta = sum_s p dprob, then the dropped p (for dv) and dscore = p (dprob - delta) scale (for dq
  // and dk), each rounded to T; zeros where masked and in the padding.
  for (int t = warp; t < L.tp; t += kWarps) {
    const std::int64_t n = t < Tq ? visible_keys(a, length, t) : 0;
    float p[2], dp[2], mask[2], part = 0.f;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int s = lane + 32 * u;
      p[u] = dp[u] = mask[u] = 0.f;
      if (s < n) {
        p[u] = exp_acc(Ss[t * L.lds + s] * scale - row_lse[t]);
        mask[u] = drop.mask((bh * Tq + t) * S + s);
        dp[u] = DPs[t * L.lds + s] * mask[u];
      }
      part += p[u] * dp[u];
    }
    const float delta = warp_sum(part);
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int s = lane + 32 * u;
      if (s >= L.sp) continue;
      Ps[t * L.ldp + s] = store<T>(p[u] * mask[u]);
      DSs[t * L.ldp + s] = store<T>(s < n ? p[u] * (dp[u] - delta) * scale : 0.f);
    }
  }
  __syncthreads();
  block_product<T, true, false>(Ps, L.ldp, DOs, L.ldv, staging, L.ldo, L.sp, Kv, L.tp);  // dv = P^T dout
  __syncthreads();
  store_rows(dv + b * a.v_batch_stride + h * Kv, a.v_row_stride, staging, L.ldo, S, Kv, nullptr);
  __syncthreads();
  block_product<T, true, false>(DSs, L.ldp, Qs, L.ldk, staging, L.ldo, L.sp, K, L.tp);  // dk = dS^T Q
  __syncthreads();
  store_rows(dk + b * a.k_batch_stride + h * K, a.k_row_stride, staging, L.ldo, S, K, nullptr);
  __syncthreads();
  block_product<T, false, false>(DSs, L.ldp, Ks, L.ldk, staging, L.ldo, L.tp, K, L.sp);  // dq = dS K
  __syncthreads();
  store_rows(dq + b * a.q_batch_stride + h * K, a.q_row_stride, staging, L.ldo, Tq, K, nullptr);
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

}  // namespace

#if !defined(DRAGOMAN_CUDA_EMULATION)
// Asked of the backward kernel, the one with the most registers; every tensor-core kernel is compiled
// for the same architectures.
bool mma::device_has_wmma() {
  return once_per_device<bool>([](int device) {
    int major = 0;
    DRAGOMAN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    cudaFuncAttributes compiled{};
    DRAGOMAN_CUDA_CHECK(cudaFuncGetAttributes(&compiled, reinterpret_cast<const void*>(mma_backward_kernel<bf16>)));
    return major >= 8 && compiled.ptxVersion >= 80;
  });
}
#endif

template <typename T>
bool mma_attention_takes(const AttentionShape& a) {
  if constexpr (!std::is_same_v<T, bf16> && !std::is_same_v<T, f16>) {
    return false;
  } else {
    if (a.queries < 1 || a.queries > kMaxRows || a.keys < 1 || a.keys > kMaxRows) return false;
    if (!mma::head_sizes_taken(a.key_size, a.value_size)) return false;
    return mma::device_has_wmma() && static_cast<std::size_t>(layout_of(a, true).bytes) <= device_shared_limit();
  }
}

template <typename T>
void mma_attention_forward(const AttentionShape& a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                           double scale, double dropout_p, std::uint64_t seed, std::uint64_t rng_stream, float* lse,
                           T* out, Stream stream) {
  launch_blocks(mma_forward_kernel<T>, a.batch * a.heads, kThreads, static_cast<std::size_t>(layout_of(a, false).bytes),
                stream, "heads", a, q, k, v, key_lengths, static_cast<float>(scale),
                dropout_of<float>(dropout_p, seed, rng_stream), lse, out);
}

template <typename T>
void mma_attention_backward(const AttentionShape& a, const T* q, const T* k, const T* v,
                            const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                            std::uint64_t rng_stream, const float* lse, const T* dout, T* dq, T* dk, T* dv,
                            Stream stream) {
  launch_blocks(mma_backward_kernel<T>, a.batch * a.heads, kThreads, static_cast<std::size_t>(layout_of(a, true).bytes),
                stream, "heads", a, q, k, v, key_lengths, static_cast<float>(scale),
                dropout_of<float>(dropout_p, seed, rng_stream), lse, dout, dq, dk, dv);
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                     \
  template bool mma_attention_takes<T>(const AttentionShape&);                                                      \
  template void mma_attention_forward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*,  \
                                         double, double, std::uint64_t, std::uint64_t, float*, T*, Stream);         \
  template void mma_attention_backward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*, \
                                          double, double, std::uint64_t, std::uint64_t, const float*, const T*, T*, \
                                          T*, T*, Stream);
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE
template bool mma_attention_takes<float>(const AttentionShape&);
template bool mma_attention_takes<double>(const AttentionShape&);

}  // namespace dragoman::cuda::attention_detail
