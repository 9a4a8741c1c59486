// Flash attention on tensor cores (see attention_flash.h): blocks of 4 warps, each owning 64 rows
// (queries, or keys for dk/dv) and walking the other side in tiles, every product on WMMA's tiles
// from shared memory (attention_mma.cuh), the softmax and dscore in float on CUDA cores.
#include "kernels/cuda/attention_flash.h"

#include <algorithm>
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
using mma::kWarps;
using mma::store_rows;
using mma::take;
using mma::warp_max;
using mma::warp_sum;

constexpr int kRows = 64;        // a block's own rows; also a tile of keys (two a lane in the softmax)
constexpr int kDkvQueries = 32;  // a tile of queries in the dk/dv kernel (its shared memory under 99 KiB)
// Pitches in shared memory: score tiles [rows][kScorePitch] floats, probability tiles
// [rows][kProbPitch] of T (padded so that the rows of a WMMA tile fall in different banks); head rows
// K + 8 and Kv + 8 of T, float accumulators K + 4 and Kv + 4.
constexpr int kScorePitch = kRows + 4;
constexpr int kProbPitch = kRows + 8;

enum class Kernel { forward, dq, dkv };

// Where each array of a kernel's block lives in its dynamic shared memory (byte offsets), and the
// head rows' pitches.
//   forward: Q [64], K [64], V [64] (T); scores [64] (float); P [64] (T); O [64] (float); the rows'
//            running maximum and sum [64 + 64]
//   dq:      Q, K, V, dout [64] (T); scores, dprob [64] (float); dS [64] (T); dq [64] (float);
//            the rows' lse and delta
//   dkv:     K, V [64], Q, dout [32] (T); scores, dprob [32] (float, then P and dS as T in place);
//            dk, dv [64] (float); the query rows' lse and delta
struct Layout {
  int ldk = 0, ldv = 0, ldak = 0, ldav = 0;
  int q = 0, k = 0, v = 0, dout = 0, s = 0, dp = 0, p = 0, acc_k = 0, acc_v = 0, rows = 0;
  int bytes = 0;
};

__host__ __device__ inline Layout layout_of(std::int64_t key_size, std::int64_t value_size, Kernel kernel) {
  Layout l;
  const int K = static_cast<int>(key_size), Kv = static_cast<int>(value_size);
  l.ldk = K + 8;
  l.ldv = Kv + 8;
  l.ldak = K + 4;
  l.ldav = Kv + 4;
  constexpr int e = 2;                                            // bytes of T
  const int other = kernel == Kernel::dkv ? kDkvQueries : kRows;  // rows of Q, dout and the score tiles
  int at = 0;
  l.q = take(at, other * l.ldk * e);
  l.k = take(at, kRows * l.ldk * e);
  l.v = take(at, kRows * l.ldv * e);
  if (kernel != Kernel::forward) l.dout = take(at, other * l.ldv * e);
  l.s = take(at, other * kScorePitch * 4);
  if (kernel != Kernel::forward) l.dp = take(at, other * kScorePitch * 4);
  if (kernel != Kernel::dkv) l.p = take(at, kRows * kProbPitch * e);
  if (kernel != Kernel::forward) l.acc_k = take(at, kRows * l.ldak * 4);
  if (kernel != Kernel::dq) l.acc_v = take(at, kRows * l.ldav * 4);
  l.rows = take(at, 2 * kRows * 4);
  l.bytes = at;
  return l;
}

// Zeros into n floats of shared memory.
__device__ inline void zero_shared(float* x, int n) {
  for (int e = static_cast<int>(threadIdx.x); e < n; e += kThreads) x[e] = 0.f;
}

// The backward terms of keys s0 + lane and s0 + lane + 32 for query t (absolute index; it sees keys
// below n) from its row of the raw scores (Q K^T) and of dout V^T: p = exp(score scale - lse), the
// dropout factor, and dprob = (dout . v) times that factor; zeros for the keys t does not see.
struct Terms {
  float p[2], mask[2], dp[2];
};
__device__ inline Terms row_terms(const float* scores, const float* dprob, std::int64_t s0, std::int64_t n, float scale,
                                  float lse, const Dropout<float>& drop, std::int64_t mask_row) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  Terms r;
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int s = lane + 32 * u;
    r.p[u] = r.mask[u] = r.dp[u] = 0.f;
    if (s0 + s < n) {
      r.p[u] = exp_acc(scores[s] * scale - lse);
      r.mask[u] = drop.mask(mask_row + s0 + s);
      r.dp[u] = dprob[s] * r.mask[u];
    }
  }
  return r;
}

// What a block of the forward or dq kernel owns: head (b, h) of [B, H] (bh = b H + h) and queries
// t0 .. t0 + rows - 1 (rows up to 64), whose sentence has `length` keys; n_max: the most keys one of
// them sees (the last one, when causal).
struct QueryBlock {
  std::int64_t bh, b, h, t0, rows, n_max;
  std::int32_t length;
};
__device__ inline QueryBlock query_block(const AttentionShape& a, const std::int32_t* key_lengths) {
  QueryBlock r;
  const std::int64_t tiles = (a.queries + kRows - 1) / kRows;
  r.bh = blockIdx.x / tiles;
  r.t0 = blockIdx.x % tiles * kRows;
  r.b = r.bh / a.heads;
  r.h = r.bh % a.heads;
  r.rows = a.queries - r.t0 < kRows ? a.queries - r.t0 : kRows;
  r.length = key_lengths[r.b];
  r.n_max = visible_keys(a, r.length, r.t0 + r.rows - 1);
  return r;
}

// Block (b, h, queries t0 .. t0 + 63): out and lse of those queries.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    flash_forward_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                         float scale, Dropout<float> drop, float* lse, T* out) {
#if DRAGOMAN_WMMA_KERNELS
  DRAGOMAN_DYNAMIC_SHARED(flash_shared);
  const Layout L = layout_of(a.key_size, a.value_size, Kernel::forward);
  T* Qs = reinterpret_cast<T*>(flash_shared + L.q);
  T* Ks = reinterpret_cast<T*>(flash_shared + L.k);
  T* Vs = reinterpret_cast<T*>(flash_shared + L.v);
  float* Ss = reinterpret_cast<float*>(flash_shared + L.s);
  T* Ps = reinterpret_cast<T*>(flash_shared + L.p);
  float* Os = reinterpret_cast<float*>(flash_shared + L.acc_v);
  float* row_max = reinterpret_cast<float*>(flash_shared + L.rows);
  float* row_sum = row_max + kRows;
  const int K = static_cast<int>(a.key_size), Kv = static_cast<int>(a.value_size);
  const std::int64_t Tq = a.queries, S = a.keys;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const QueryBlock blk = query_block(a, key_lengths);
  const std::int64_t bh = blk.bh, b = blk.b, h = blk.h, t0 = blk.t0, rows = blk.rows, n_max = blk.n_max;
  const std::int32_t length = blk.length;
  copy_rows(Qs, L.ldk, q + b * a.q_batch_stride + t0 * a.q_row_stride + h * K, a.q_row_stride, rows, kRows, K);
  zero_shared(Os, kRows * L.ldav);
  for (int t = static_cast<int>(threadIdx.x); t < kRows; t += kThreads) {
    row_max[t] = -INFINITY;
    row_sum[t] = 0.f;
  }
  const T* kb = k + b * a.k_batch_stride + h * K;
  const T* vb = v + b * a.v_batch_stride + h * Kv;
  for (std::int64_t s0 = 0; s0 < n_max; s0 += kRows) {
    const std::int64_t keys = n_max - s0 < kRows ? n_max - s0 : kRows;
    __syncthreads();  // the previous tile's O += P V has read Ps and Vs
    copy_rows(Ks, L.ldk, kb + s0 * a.k_row_stride, a.k_row_stride, keys, kRows, K);
    copy_rows(Vs, L.ldv, vb + s0 * a.v_row_stride, a.v_row_stride, keys, kRows, Kv);
    __syncthreads();
    block_product<T, false, true>(Qs, L.ldk, Ks, L.ldk, Ss, kScorePitch, kRows, kRows, K);  // Q K^T
    __syncthreads();
    // Each warp a query row at a time, each lane keys lane and lane + 32: the row's maximum grows to
    // m (the output and the sum so far are rescaled by exp(m_old - m)), the probabilities
    // exp(x - m), dropped and rounded to T, into Ps (zeros where masked), their undropped sum added.
    for (int t = warp; t < kRows; t += kWarps) {
      const std::int64_t n = t < rows ? visible_keys(a, length, t0 + t) : 0;
      const float m_old = row_max[t];
      float x[2], m = m_old;
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int s = lane + 32 * u;
        x[u] = s0 + s < n ? Ss[t * kScorePitch + s] * scale : -INFINITY;
        m = fmaxf(m, x[u]);
      }
      m = warp_max(m);
      // m is -inf while the query has seen no key: nothing to add, nothing to rescale.
      const float alpha = m == -INFINITY ? 1.f : exp_acc(m_old - m);
      float sum = 0.f;
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int s = lane + 32 * u;
        float p = 0.f, dropped = 0.f;
        if (s0 + s < n) {
          p = exp_acc(x[u] - m);
          dropped = p * drop.mask((bh * Tq + t0 + t) * S + s0 + s);
        }
        sum += p;
        Ps[t * kProbPitch + s] = store<T>(dropped);
      }
      sum = warp_sum(sum);  // every lane has read row_max[t] and row_sum[t] is lane 0's alone
      if (alpha != 1.f) {
        for (int d = lane; d < Kv; d += 32) Os[t * L.ldav + d] *= alpha;
      }
      if (lane == 0) {
        row_max[t] = m;
        row_sum[t] = row_sum[t] * alpha + sum;
      }
    }
    __syncthreads();
    block_product<T, false, false, true>(Ps, kProbPitch, Vs, L.ldv, Os, L.ldav, kRows, Kv, kRows);  // O += P V
  }
  __syncthreads();
  // lse; a query that sees no key: out 0 (its O is 0: divided by 1), lse 0.
  for (int t = static_cast<int>(threadIdx.x); t < rows; t += kThreads) {
    const bool sees = visible_keys(a, length, t0 + t) > 0;
    if (lse != nullptr) lse[bh * Tq + t0 + t] = sees ? row_max[t] + log_acc(row_sum[t]) : 0.f;
    if (!sees) row_sum[t] = 1.f;
  }
  __syncthreads();
  store_rows(out + b * a.out_batch_stride + t0 * a.out_row_stride + h * Kv, a.out_row_stride, Os, L.ldav, rows, Kv,
             row_sum);
#elif defined(__CUDA_ARCH__)
  __trap();  // compiled for an architecture without bf16 WMMA (flash_attention_takes refuses below sm_80)
#endif
}

// Block (b, h, queries t0 .. t0 + 63): delta = sum_s p * dprob of those queries (a first pass over
// the key tiles; into the workspace for the dk/dv kernel), then dq (a second pass: dscore, rounded
// to T, times K, accumulated tile by tile).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    flash_dq_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths, float scale,
                    Dropout<float> drop, const float* lse, const T* dout, T* dq, float* delta) {
#if DRAGOMAN_WMMA_KERNELS
  DRAGOMAN_DYNAMIC_SHARED(flash_shared);
  const Layout L = layout_of(a.key_size, a.value_size, Kernel::dq);
  T* Qs = reinterpret_cast<T*>(flash_shared + L.q);
  T* Ks = reinterpret_cast<T*>(flash_shared + L.k);
  T* Vs = reinterpret_cast<T*>(flash_shared + L.v);
  T* DOs = reinterpret_cast<T*>(flash_shared + L.dout);
  float* Ss = reinterpret_cast<float*>(flash_shared + L.s);
  float* DPs = reinterpret_cast<float*>(flash_shared + L.dp);
  T* DSs = reinterpret_cast<T*>(flash_shared + L.p);
  float* DQs = reinterpret_cast<float*>(flash_shared + L.acc_k);
  float* row_lse = reinterpret_cast<float*>(flash_shared + L.rows);
  float* row_delta = row_lse + kRows;
  const int K = static_cast<int>(a.key_size), Kv = static_cast<int>(a.value_size);
  const std::int64_t Tq = a.queries, S = a.keys;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const QueryBlock blk = query_block(a, key_lengths);
  const std::int64_t bh = blk.bh, b = blk.b, h = blk.h, t0 = blk.t0, rows = blk.rows, n_max = blk.n_max;
  const std::int32_t length = blk.length;
  const bool one_tile = n_max <= kRows;  // the second pass reuses the first's terms
  copy_rows(Qs, L.ldk, q + b * a.q_batch_stride + t0 * a.q_row_stride + h * K, a.q_row_stride, rows, kRows, K);
  copy_rows(DOs, L.ldv, dout + b * a.out_batch_stride + t0 * a.out_row_stride + h * Kv, a.out_row_stride, rows, kRows,
            Kv);
  zero_shared(DQs, kRows * L.ldak);
  for (int t = static_cast<int>(threadIdx.x); t < kRows; t += kThreads) {
    row_lse[t] = t < rows ? lse[bh * Tq + t0 + t] : 0.f;
    row_delta[t] = 0.f;
  }
  const T* kb = k + b * a.k_batch_stride + h * K;
  const T* vb = v + b * a.v_batch_stride + h * Kv;
  // The key tile at s0 into Ks and Vs, then its raw scores Q K^T and dout V^T into Ss and DPs.
  const auto tile_products = [&](std::int64_t s0) {
    const std::int64_t keys = n_max - s0 < kRows ? n_max - s0 : kRows;
    __syncthreads();  // the previous tile's products have read Ks and Vs
    copy_rows(Ks, L.ldk, kb + s0 * a.k_row_stride, a.k_row_stride, keys, kRows, K);
    copy_rows(Vs, L.ldv, vb + s0 * a.v_row_stride, a.v_row_stride, keys, kRows, Kv);
    __syncthreads();
    block_product<T, false, true>(Qs, L.ldk, Ks, L.ldk, Ss, kScorePitch, kRows, kRows, K);     // Q K^T
    block_product<T, false, true>(DOs, L.ldv, Vs, L.ldv, DPs, kScorePitch, kRows, kRows, Kv);  // dout V^T
    __syncthreads();
  };
  // First pass: delta of each query row, summed tile by tile (each tile's part a warp butterfly).
  // With one tile, p and dprob are left in Ss and DPs for the second pass.
  for (std::int64_t s0 = 0; s0 < n_max; s0 += kRows) {
    tile_products(s0);
    for (int t = warp; t < kRows; t += kWarps) {
      const std::int64_t n = t < rows ? visible_keys(a, length, t0 + t) : 0;
      const Terms r = row_terms(Ss + t * kScorePitch, DPs + t * kScorePitch, s0, n, scale, row_lse[t], drop,
                                (bh * Tq + t0 + t) * S);
      const float part = warp_sum(r.p[0] * r.dp[0] + r.p[1] * r.dp[1]);
      if (one_tile) {
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          Ss[t * kScorePitch + lane + 32 * u] = r.p[u];
          DPs[t * kScorePitch + lane + 32 * u] = r.dp[u];
        }
      }
      if (lane == 0) row_delta[t] += part;
    }
  }
  // Second pass: dscore = p (dprob - delta) scale, rounded to T, then dq += dS K.
  for (std::int64_t s0 = 0; s0 < n_max; s0 += kRows) {
    if (!one_tile) tile_products(s0);
    __syncthreads();  // the first pass's deltas (and with one tile its p and dprob) are in place
    for (int t = warp; t < kRows; t += kWarps) {
      const std::int64_t n = t < rows ? visible_keys(a, length, t0 + t) : 0;
      const float d = row_delta[t];
      float p[2], dp[2];
      if (one_tile) {
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          p[u] = Ss[t * kScorePitch + lane + 32 * u];
          dp[u] = DPs[t * kScorePitch + lane + 32 * u];
        }
      } else {
        const Terms r = row_terms(Ss + t * kScorePitch, DPs + t * kScorePitch, s0, n, scale, row_lse[t], drop,
                                  (bh * Tq + t0 + t) * S);
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          p[u] = r.p[u];
          dp[u] = r.dp[u];
        }
      }
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int s = lane + 32 * u;
        DSs[t * kProbPitch + s] = store<T>(s0 + s < n ? p[u] * (dp[u] - d) * scale : 0.f);
      }
    }
    __syncthreads();
    block_product<T, false, false, true>(DSs, kProbPitch, Ks, L.ldk, DQs, L.ldak, kRows, K, kRows);  // dq += dS K
  }
  __syncthreads();
  for (int t = static_cast<int>(threadIdx.x); t < rows; t += kThreads) delta[bh * Tq + t0 + t] = row_delta[t];
  store_rows(dq + b * a.q_batch_stride + t0 * a.q_row_stride + h * K, a.q_row_stride, DQs, L.ldak, rows, K, nullptr);
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

// Block (b, h, keys s0 .. s0 + 63): dk and dv of those keys, summed over the tiles of 32 queries that
// see them, in query order. P and dS, rounded to T, are written over their rows of the score tiles
// (a warp owns a row: all its lanes read the row before any writes).
// (Bounds of 2 blocks an SM, as its shared memory allows for K = 64 on sm_80 and sm_90: ptxas's
// default spilled 16 bytes in f16 on sm_90 at 72 registers.)
template <typename T>
__global__ void __launch_bounds__(kThreads, 2)
    flash_dkv_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths, float scale,
                     Dropout<float> drop, const float* lse, const T* dout, const float* delta, T* dk, T* dv) {
#if DRAGOMAN_WMMA_KERNELS
  DRAGOMAN_DYNAMIC_SHARED(flash_shared);
  const Layout L = layout_of(a.key_size, a.value_size, Kernel::dkv);
  T* Qs = reinterpret_cast<T*>(flash_shared + L.q);
  T* Ks = reinterpret_cast<T*>(flash_shared + L.k);
  T* Vs = reinterpret_cast<T*>(flash_shared + L.v);
  T* DOs = reinterpret_cast<T*>(flash_shared + L.dout);
  float* Ss = reinterpret_cast<float*>(flash_shared + L.s);
  float* DPs = reinterpret_cast<float*>(flash_shared + L.dp);
  T* Ps = reinterpret_cast<T*>(Ss);    // row t at t * 2 kScorePitch, over row t of the scores
  T* DSs = reinterpret_cast<T*>(DPs);  // likewise over dprob
  constexpr int kPitchT = 2 * kScorePitch;
  float* DKs = reinterpret_cast<float*>(flash_shared + L.acc_k);
  float* DVs = reinterpret_cast<float*>(flash_shared + L.acc_v);
  float* row_lse = reinterpret_cast<float*>(flash_shared + L.rows);
  float* row_delta = row_lse + kRows;
  const int K = static_cast<int>(a.key_size), Kv = static_cast<int>(a.value_size);
  const std::int64_t Tq = a.queries, S = a.keys, tiles = (S + kRows - 1) / kRows;
  const std::int64_t bh = blockIdx.x / tiles, s0 = blockIdx.x % tiles * kRows, b = bh / a.heads, h = bh % a.heads;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const std::int32_t length = key_lengths[b];
  const std::int64_t n_keys = length < S ? (length > 0 ? length : 0) : S;
  // Query t sees key s when s < n_keys and (causal) s <= query_offset + t: the first query that sees
  // the block's first key sees them all from there on, or none (keys past the length: zeros).
  const std::int64_t t_begin = s0 >= n_keys ? Tq : a.causal && s0 - a.query_offset > 0 ? s0 - a.query_offset : 0;
  const std::int64_t keys = s0 < n_keys ? (n_keys - s0 < kRows ? n_keys - s0 : kRows) : 0;
  copy_rows(Ks, L.ldk, k + b * a.k_batch_stride + s0 * a.k_row_stride + h * K, a.k_row_stride, keys, kRows, K);
  copy_rows(Vs, L.ldv, v + b * a.v_batch_stride + s0 * a.v_row_stride + h * Kv, a.v_row_stride, keys, kRows, Kv);
  zero_shared(DKs, kRows * L.ldak);
  zero_shared(DVs, kRows * L.ldav);
  const T* qb = q + b * a.q_batch_stride + h * K;
  const T* ob = dout + b * a.out_batch_stride + h * Kv;
  for (std::int64_t t0 = t_begin; t0 < Tq; t0 += kDkvQueries) {
    const std::int64_t rows = Tq - t0 < kDkvQueries ? Tq - t0 : kDkvQueries;
    __syncthreads();  // the previous tile's products have read Qs, DOs, Ps and DSs
    copy_rows(Qs, L.ldk, qb + t0 * a.q_row_stride, a.q_row_stride, rows, kDkvQueries, K);
    copy_rows(DOs, L.ldv, ob + t0 * a.out_row_stride, a.out_row_stride, rows, kDkvQueries, Kv);
    for (int t = static_cast<int>(threadIdx.x); t < kDkvQueries; t += kThreads) {
      row_lse[t] = t < rows ? lse[bh * Tq + t0 + t] : 0.f;
      row_delta[t] = t < rows ? delta[bh * Tq + t0 + t] : 0.f;
    }
    __syncthreads();
    block_product<T, false, true>(Qs, L.ldk, Ks, L.ldk, Ss, kScorePitch, kDkvQueries, kRows, K);     // Q K^T
    block_product<T, false, true>(DOs, L.ldv, Vs, L.ldv, DPs, kScorePitch, kDkvQueries, kRows, Kv);  // dout V^T
    __syncthreads();
    // Each warp a query row at a time, each lane keys s0 + lane and s0 + lane + 32: the dropped p
    // (for dv) and dscore = p (dprob - delta) scale (for dk), rounded to T.
    for (int t = warp; t < kDkvQueries; t += kWarps) {
      const std::int64_t n = t < rows ? visible_keys(a, length, t0 + t) : 0;
      const Terms r = row_terms(Ss + t * kScorePitch, DPs + t * kScorePitch, s0, n, scale, row_lse[t], drop,
                                (bh * Tq + t0 + t) * S);
      T dropped[2], dscore[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        dropped[u] = store<T>(r.p[u] * r.mask[u]);
        dscore[u] = store<T>(s0 + lane + 32 * u < n ? r.p[u] * (r.dp[u] - row_delta[t]) * scale : 0.f);
      }
      __syncwarp();  // the row's floats are read before its T values are written over them
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        Ps[t * kPitchT + lane + 32 * u] = dropped[u];
        DSs[t * kPitchT + lane + 32 * u] = dscore[u];
      }
    }
    __syncthreads();
    // dv += P^T dout, dk += dS^T Q
    block_product<T, true, false, true>(Ps, kPitchT, DOs, L.ldv, DVs, L.ldav, kRows, Kv, kDkvQueries);
    block_product<T, true, false, true>(DSs, kPitchT, Qs, L.ldk, DKs, L.ldak, kRows, K, kDkvQueries);
  }
  __syncthreads();
  const std::int64_t own = S - s0 < kRows ? S - s0 : kRows;
  store_rows(dk + b * a.k_batch_stride + s0 * a.k_row_stride + h * K, a.k_row_stride, DKs, L.ldak, own, K, nullptr);
  store_rows(dv + b * a.v_batch_stride + s0 * a.v_row_stride + h * Kv, a.v_row_stride, DVs, L.ldav, own, Kv, nullptr);
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

std::int64_t row_tiles(std::int64_t rows) { return (rows + kRows - 1) / kRows; }

}  // namespace

std::size_t flash_attention_shared_bytes(std::int64_t key_size, std::int64_t value_size) {
  int most = 0;
  for (const Kernel kernel : {Kernel::forward, Kernel::dq, Kernel::dkv})
    most = std::max(most, layout_of(key_size, value_size, kernel).bytes);
  return static_cast<std::size_t>(most);
}

template <typename T>
bool flash_attention_takes(const AttentionShape& a) {
  if constexpr (!std::is_same_v<T, bf16> && !std::is_same_v<T, f16>) {
    return false;
  } else {
    if (a.queries < 1 || a.keys < 1 || !mma::head_sizes_taken(a.key_size, a.value_size)) return false;
    return mma::device_has_wmma() && flash_attention_shared_bytes(a.key_size, a.value_size) <= device_shared_limit();
  }
}

template <typename T>
void flash_attention_forward(const AttentionShape& a, const T* q, const T* k, const T* v,
                             const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                             std::uint64_t rng_stream, float* lse, T* out, Stream stream) {
  const Layout L = layout_of(a.key_size, a.value_size, Kernel::forward);
  launch_blocks(flash_forward_kernel<T>, a.batch * a.heads * row_tiles(a.queries), kThreads,
                static_cast<std::size_t>(L.bytes), stream, "query tiles", a, q, k, v, key_lengths,
                static_cast<float>(scale), dropout_of<float>(dropout_p, seed, rng_stream), lse, out);
}

template <typename T>
void flash_attention_backward(const AttentionShape& a, const T* q, const T* k, const T* v,
                              const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                              std::uint64_t rng_stream, const float* lse, const T* dout, T* dq, T* dk, T* dv,
                              float* workspace, Stream stream) {
  const Dropout<float> drop = dropout_of<float>(dropout_p, seed, rng_stream);
  const float scale_f = static_cast<float>(scale);
  const Layout dq_layout = layout_of(a.key_size, a.value_size, Kernel::dq);
  const Layout dkv_layout = layout_of(a.key_size, a.value_size, Kernel::dkv);
  launch_blocks(flash_dq_kernel<T>, a.batch * a.heads * row_tiles(a.queries), kThreads,
                static_cast<std::size_t>(dq_layout.bytes), stream, "query tiles", a, q, k, v, key_lengths, scale_f,
                drop, lse, dout, dq, workspace);
  launch_blocks(flash_dkv_kernel<T>, a.batch * a.heads * row_tiles(a.keys), kThreads,
                static_cast<std::size_t>(dkv_layout.bytes), stream, "key tiles", a, q, k, v, key_lengths, scale_f, drop,
                lse, dout, static_cast<const float*>(workspace), dk, dv);
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                       \
  template bool flash_attention_takes<T>(const AttentionShape&);                                                      \
  template void flash_attention_forward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*,  \
                                           double, double, std::uint64_t, std::uint64_t, float*, T*, Stream);         \
  template void flash_attention_backward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*, \
                                            double, double, std::uint64_t, std::uint64_t, const float*, const T*, T*, \
                                            T*, T*, float*, Stream);
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE
template bool flash_attention_takes<float>(const AttentionShape&);
template bool flash_attention_takes<double>(const AttentionShape&);

}  // namespace dragoman::cuda::attention_detail
