// Tiled attention on CUDA (see attention_tiled.h): a block per 32 queries (forward, dq) or 32 keys
// (dk/dv), the other side in tiles of 64 rows through shared memory, a 4 x 4 block of scores per
// thread, the softmax online. Compiled with FMA contraction (unlike attention.cu): its sums are in
// another order than the CPU's anyway, and a fused multiply-add rounds once instead of twice.
#include "kernels/cuda/attention_tiled.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "device/cuda/check.h"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_launch.cuh"

namespace dragoman::cuda::attention_detail {
namespace {

constexpr int kRows = 32;                            // a block's own rows: queries, or keys (dk/dv)
constexpr int kCols = 64;                            // the other side's rows per tile
constexpr int kColThreads = 16;                      // threads along a tile's columns
constexpr int kRowThreads = 8;                       // and along the block's rows
constexpr int kThreads = kRowThreads * kColThreads;  // 128: thread (ty, tx) = (tid / 16, tid % 16)
constexpr int kRowsPer = kRows / kRowThreads;        // 4: thread (ty, tx) owns rows ty + 8 i
constexpr int kColsPer = kCols / kColThreads;        // 4: and tile columns tx + 16 j
constexpr int kPitchP = kCols + 1;                   // a row of the probability tiles in shared memory
constexpr std::int64_t kMaxSize = 128;               // K and Kv: output columns tx + 16 g, g < G <= 8

// A row pitch with no shared-memory bank conflicts when 16 threads read 16 rows at the same column.
__host__ __device__ constexpr int odd(std::int64_t n) { return static_cast<int>(n | 1); }

extern __shared__ __align__(16) float tile_shared[];

// Loads in flight per thread in load_tile: each thread issues this many global loads before it
// waits for the first (a loop of one load and one shared store at a time waits a global latency per
// element).
constexpr int kLoadBatch = 4;

// Rows [first, first + rows) of a block of rows of `size` elements at `base` (row stride `stride`)
// into a shared tile of pitch `pitch`, as float; rows at or past `end` are zeros (a masked key's
// value must add 0, not 0 times whatever lies past a key length). Rows of whole 16-byte vectors at
// 16-byte addresses (bf16 and f16 sizes a multiple of 8, float of 4: every head size the models
// use) are read a vector at a time; either way the tile holds the same values.
template <typename T>
__device__ void load_tile(float* tile, int rows, int pitch, const T* base, std::int64_t stride, std::int64_t first,
                          std::int64_t end, int size) {
  constexpr int kVector = 16 / static_cast<int>(sizeof(T));
  if (size % kVector == 0 && stride % kVector == 0 && reinterpret_cast<std::uintptr_t>(base) % 16 == 0) {
    const int per_row = size / kVector, n = rows * per_row;
    for (int e0 = static_cast<int>(threadIdx.x); e0 < n; e0 += kThreads * kLoadBatch) {
      uint4 raw[kLoadBatch];
#pragma unroll
      for (int u = 0; u < kLoadBatch; ++u) {
        const int e = e0 + u * kThreads, r = e / per_row;
        const std::int64_t row = first + r;
        raw[u] = make_uint4(0u, 0u, 0u, 0u);  // zero bits: +0 in float, bf16 and f16
        if (e < n && row < end)
          raw[u] = *reinterpret_cast<const uint4*>(base + row * stride + (e - r * per_row) * kVector);
      }
#pragma unroll
      for (int u = 0; u < kLoadBatch; ++u) {
        const int e = e0 + u * kThreads, r = e / per_row, d = (e - r * per_row) * kVector;
        if (e >= n) break;
#pragma unroll
        for (int j = 0; j < kVector; ++j) tile[r * pitch + d + j] = vector_element<T>(raw[u], j);
      }
    }
    return;
  }
  const int n = rows * size;
  for (int e0 = static_cast<int>(threadIdx.x); e0 < n; e0 += kThreads * kLoadBatch) {
    float x[kLoadBatch];
#pragma unroll
    for (int u = 0; u < kLoadBatch; ++u) {
      const int e = e0 + u * kThreads, r = e / size;
      const std::int64_t row = first + r;
      x[u] = e < n && row < end ? load(base[row * stride + e - r * size]) : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kLoadBatch; ++u) {
      const int e = e0 + u * kThreads, r = e / size;
      if (e < n) tile[r * pitch + e - r * size] = x[u];
    }
  }
}

// The maximum and the sum over the 16 threads of a row (lanes 0-15 or 16-31 of a warp): the same
// butterfly in every lane, so all 16 hold the same bits.
__device__ inline float row_max(float x) {
  for (int o = kColThreads / 2; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, o));
  return x;
}
__device__ inline float row_sum(float x) {
  for (int o = kColThreads / 2; o > 0; o /= 2) x += __shfl_xor_sync(0xFFFFFFFFu, x, o);
  return x;
}

// acc[i][j] = sum over d < size of a[(ty + 8 i) * pitch_a + d] * b[(tx + 16 j) * pitch_b + d], in d order,
// for j < J (acc[i][j] = 0 beyond: columns past the tile's last row, which the callers mask).
template <int J>
__device__ inline void tile_dots_first(const float* a, int pitch_a, const float* b, int pitch_b, int size, int ty,
                                       int tx, float (&acc)[kRowsPer][kColsPer]) {
#pragma unroll
  for (int i = 0; i < kRowsPer; ++i) {
#pragma unroll
    for (int j = 0; j < kColsPer; ++j) acc[i][j] = 0.f;
  }
  for (int d = 0; d < size; ++d) {
    float x[kRowsPer], y[J];
#pragma unroll
    for (int i = 0; i < kRowsPer; ++i) x[i] = a[(ty + kRowThreads * i) * pitch_a + d];
#pragma unroll
    for (int j = 0; j < J; ++j) y[j] = b[(tx + kColThreads * j) * pitch_b + d];
#pragma unroll
    for (int i = 0; i < kRowsPer; ++i) {
#pragma unroll
      for (int j = 0; j < J; ++j) acc[i][j] += x[i] * y[j];
    }
  }
}

// The same for a tile with `cols` rows of b: a tile of at most 32 (a sentence of up to 32 tokens,
// or the last part of a longer one) computes only the dot products of its first 32 columns, the
// others being masked; each product computed is the same either way, bit for bit.
__device__ inline void tile_dots(const float* a, int pitch_a, const float* b, int pitch_b, int size, int ty, int tx,
                                 std::int64_t cols, float (&acc)[kRowsPer][kColsPer]) {
  if (cols <= kCols / 2) {
    tile_dots_first<kColsPer / 2>(a, pitch_a, b, pitch_b, size, ty, tx, acc);
  } else {
    tile_dots_first<kColsPer>(a, pitch_a, b, pitch_b, size, ty, tx, acc);
  }
}

// acc[i][g] += sum over c < cols of p[(ty + 8 i) * kPitchP + c] * m[c * pitch + tx + 16 g] (g with
// tx + 16 g < size), in c order.
template <int G>
__device__ inline void tile_products(const float* p, const float* m, int pitch, int cols, int size, int ty, int tx,
                                     float (&acc)[kRowsPer][G]) {
  for (int c = 0; c < cols; ++c) {
    float y[G];
#pragma unroll
    for (int g = 0; g < G; ++g) y[g] = tx + kColThreads * g < size ? m[c * pitch + tx + kColThreads * g] : 0.f;
#pragma unroll
    for (int i = 0; i < kRowsPer; ++i) {
      const float x = p[(ty + kRowThreads * i) * kPitchP + c];
#pragma unroll
      for (int g = 0; g < G; ++g) acc[i][g] += x * y[g];
    }
  }
}

// Stores row `row` of acc (g with tx + 16 g < size) at dst, rounding each element once.
template <typename T, int G>
__device__ inline void store_row(T* dst, const float (&acc)[G], float divisor, int size, int tx) {
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const int d = tx + kColThreads * g;
    if (d < size) dst[d] = store<T>(divisor == 1.f ? acc[g] : acc[g] / divisor);
  }
}

// Block (b, h, queries t0 .. t0 + 31): out rows and lse.
//   shared: Q [32][odd K], K [64][odd K], V [64][Kv], P [32][65]
template <typename T, int G>
__global__ void __launch_bounds__(kThreads)
    tiled_forward_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                         float scale, Dropout<float> drop, float* lse, T* out) {
  const int K = static_cast<int>(a.key_size), Kv = static_cast<int>(a.value_size), pk = odd(K);
  const std::int64_t Tq = a.queries, S = a.keys;
  float* Qs = tile_shared;
  float* Ks = Qs + kRows * pk;
  float* Vs = Ks + kCols * pk;
  float* Ps = Vs + kCols * Kv;
  const std::int64_t tiles = (Tq + kRows - 1) / kRows, bh = blockIdx.x / tiles, t0 = blockIdx.x % tiles * kRows;
  const std::int64_t b = bh / a.heads, h = bh % a.heads;
  const int tx = static_cast<int>(threadIdx.x) % kColThreads, ty = static_cast<int>(threadIdx.x) / kColThreads;
  const std::int32_t length = key_lengths[b];
  // Keys seen by the block's last query: the most any of its queries sees.
  const std::int64_t n_max = visible_keys(a, length, (t0 + kRows < Tq ? t0 + kRows : Tq) - 1);
  std::int64_t n[kRowsPer];
  float m[kRowsPer], l[kRowsPer], o[kRowsPer][G];
#pragma unroll
  for (int i = 0; i < kRowsPer; ++i) {
    const std::int64_t t = t0 + ty + kRowThreads * i;
    n[i] = t < Tq ? visible_keys(a, length, t) : 0;
    m[i] = -INFINITY;
    l[i] = 0.f;
#pragma unroll
    for (int g = 0; g < G; ++g) o[i][g] = 0.f;
  }
  load_tile(Qs, kRows, pk, q + b * a.q_batch_stride + h * K, a.q_row_stride, t0, Tq, K);
  const T* kb = k + b * a.k_batch_stride + h * K;
  const T* vb = v + b * a.v_batch_stride + h * Kv;
  for (std::int64_t s0 = 0; s0 < n_max; s0 += kCols) {
    __syncthreads();  // the previous tile is read
    load_tile(Ks, kCols, pk, kb + s0 * a.k_row_stride, a.k_row_stride, 0, n_max - s0, K);
    load_tile(Vs, kCols, Kv, vb + s0 * a.v_row_stride, a.v_row_stride, 0, n_max - s0, Kv);
    __syncthreads();
    float sc[kRowsPer][kColsPer];
    tile_dots(Qs, pk, Ks, pk, K, ty, tx, n_max - s0, sc);
#pragma unroll
    for (int i = 0; i < kRowsPer; ++i) {
      const std::int64_t t = t0 + ty + kRowThreads * i;
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < kColsPer; ++j) {
        sc[i][j] = s0 + tx + kColThreads * j < n[i] ? sc[i][j] * scale : -INFINITY;
        tile_max = fmaxf(tile_max, sc[i][j]);
      }
      const float m_new = fmaxf(m[i], row_max(tile_max));
      // Every lane of the row takes the same branch (m_new is the row's).
      const float alpha = m_new == -INFINITY ? 1.f : exp_acc(m[i] - m_new);
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < kColsPer; ++j) {
        const std::int64_t s = s0 + tx + kColThreads * j;
        float p = 0.f, dropped = 0.f;
        if (s < n[i]) {
          p = exp_acc(sc[i][j] - m_new);
          dropped = p * drop.mask((bh * Tq + t) * S + s);
        }
        sum += p;
        Ps[(ty + kRowThreads * i) * kPitchP + tx + kColThreads * j] = dropped;
      }
      if (m_new != -INFINITY) m[i] = m_new;
      l[i] = l[i] * alpha + row_sum(sum);
#pragma unroll
      for (int g = 0; g < G; ++g) o[i][g] *= alpha;
    }
    __syncthreads();
    tile_products<G>(Ps, Vs, Kv, static_cast<int>(n_max - s0 < kCols ? n_max - s0 : kCols), Kv, ty, tx, o);
  }
#pragma unroll
  for (int i = 0; i < kRowsPer; ++i) {
    const std::int64_t t = t0 + ty + kRowThreads * i;
    if (t >= Tq) continue;
    if (lse != nullptr && tx == 0) lse[bh * Tq + t] = n[i] > 0 ? m[i] + log_acc(l[i]) : 0.f;
    // A query that sees no key: o is 0 and so is out.
    store_row<T, G>(out + b * a.out_batch_stride + t * a.out_row_stride + h * Kv, o[i], n[i] > 0 ? l[i] : 1.f, Kv, tx);
  }
}

// Blocks per SM the backward kernels' registers must allow: for head sizes up to 64 (G = 4) on sm_90
// the 3 that their shared memory allows (about 67 KiB a block with K = 64; at 184 registers a thread
// dq had room for 2), on sm_80 2 (at 3, ptxas spills there); for larger heads 1 (about 200 registers).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr int kNarrowBackwardBlocks = 2;
#else
constexpr int kNarrowBackwardBlocks = 3;
#endif
template <int G>
constexpr int kBackwardBlocks = G <= 4 ? kNarrowBackwardBlocks : 1;

// The probabilities of one tile of scores for the backward pass: p = exp(score - lse) where visible,
// dprob (dout . v) times the dropout factor; 0 and 0 where masked. sc, dp: the raw dot products.
__device__ inline void backward_terms(float& sc, float& dp, bool visible, float scale, float log_sum, float mask) {
  if (visible) {
    sc = exp_acc(sc * scale - log_sum);
    dp *= mask;
  } else {
    sc = 0.f;
    dp = 0.f;
  }
}

// Block (b, h, queries t0 .. t0 + 31): delta (sum_s p * dprob, into the workspace for the dk/dv
// kernel) from a first pass over the keys, then dq from a second (which recomputes the scores only
// when the keys take more than one tile).
//   shared: Q [32][odd K], dout [32][odd Kv], K [64][odd K], V [64][odd Kv], p [32][65],
//   dprob then dscore [32][65], each row's lse [32] and visible keys [32]
template <typename T, int G>
__global__ void __launch_bounds__(kThreads, kBackwardBlocks<G>)
    tiled_dq_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths, float scale,
                    Dropout<float> drop, const float* lse, const T* dout, T* dq, float* delta) {
  const int K = static_cast<int>(a.key_size), Kv = static_cast<int>(a.value_size), pk = odd(K), pv = odd(Kv);
  const std::int64_t Tq = a.queries, S = a.keys;
  float* Qs = tile_shared;
  float* Os = Qs + kRows * pk;
  float* Ks = Os + kRows * pv;
  float* Vs = Ks + kCols * pk;
  float* Ps = Vs + kCols * pv;
  float* Ds = Ps + kRows * kPitchP;
  float* row_lse = Ds + kRows * kPitchP;
  int* row_keys = reinterpret_cast<int*>(row_lse + kRows);
  const std::int64_t tiles = (Tq + kRows - 1) / kRows, bh = blockIdx.x / tiles, t0 = blockIdx.x % tiles * kRows;
  const std::int64_t b = bh / a.heads, h = bh % a.heads;
  const int tx = static_cast<int>(threadIdx.x) % kColThreads, ty = static_cast<int>(threadIdx.x) / kColThreads;
  const std::int32_t length = key_lengths[b];
  const std::int64_t n_max = visible_keys(a, length, (t0 + kRows < Tq ? t0 + kRows : Tq) - 1);
  for (int r = static_cast<int>(threadIdx.x); r < kRows; r += kThreads) {
    const std::int64_t t = t0 + r;
    row_keys[r] = t < Tq ? static_cast<int>(visible_keys(a, length, t)) : 0;
    row_lse[r] = t < Tq ? lse[bh * Tq + t] : 0.f;
  }
  float dsum[kRowsPer], acc[kRowsPer][G];
#pragma unroll
  for (int i = 0; i < kRowsPer; ++i) {
    dsum[i] = 0.f;
#pragma unroll
    for (int g = 0; g < G; ++g) acc[i][g] = 0.f;
  }
  load_tile(Qs, kRows, pk, q + b * a.q_batch_stride + h * K, a.q_row_stride, t0, Tq, K);
  load_tile(Os, kRows, pv, dout + b * a.out_batch_stride + h * Kv, a.out_row_stride, t0, Tq, Kv);
  const T* kb = k + b * a.k_batch_stride + h * K;
  const T* vb = v + b * a.v_batch_stride + h * Kv;
  // Keys in one tile (every sentence up to 64 tokens): the second pass finds the tile's K and V,
  // and the thread's own entries of p and dprob, where the first pass left them (the same values a
  // recomputation would give, bit for bit), and only forms dscore.
  const bool one_tile = n_max <= kCols;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::int64_t s0 = 0; s0 < n_max; s0 += kCols) {
      if (pass == 0 || !one_tile) {
        __syncthreads();
        load_tile(Ks, kCols, pk, kb + s0 * a.k_row_stride, a.k_row_stride, 0, n_max - s0, K);
        load_tile(Vs, kCols, pv, vb + s0 * a.v_row_stride, a.v_row_stride, 0, n_max - s0, Kv);
        __syncthreads();
        {
          float p[kRowsPer][kColsPer], dp[kRowsPer][kColsPer];
          tile_dots(Qs, pk, Ks, pk, K, ty, tx, n_max - s0, p);
          tile_dots(Os, pv, Vs, pv, Kv, ty, tx, n_max - s0, dp);
          // The raw dot products into the thread's own entries of Ps and Ds, then each entry on its
          // own (a loop, not 16 inlined Philox calls: those spilled registers on sm_80).
#pragma unroll
          for (int i = 0; i < kRowsPer; ++i) {
#pragma unroll
            for (int j = 0; j < kColsPer; ++j) {
              Ps[(ty + kRowThreads * i) * kPitchP + tx + kColThreads * j] = p[i][j];
              Ds[(ty + kRowThreads * i) * kPitchP + tx + kColThreads * j] = dp[i][j];
            }
          }
        }
#pragma unroll 1
        for (int e = 0; e < kRowsPer * kColsPer; ++e) {
          const int r = ty + kRowThreads * (e / kColsPer), c = tx + kColThreads * (e % kColsPer);
          const std::int64_t s = s0 + c;
          const bool visible = s < row_keys[r];
          float p = Ps[r * kPitchP + c], dp = Ds[r * kPitchP + c];
          backward_terms(p, dp, visible, scale, row_lse[r], visible ? drop.mask((bh * Tq + t0 + r) * S + s) : 0.f);
          Ps[r * kPitchP + c] = p;
          Ds[r * kPitchP + c] = dp;
        }
      }
#pragma unroll
      for (int i = 0; i < kRowsPer; ++i) {
#pragma unroll
        for (int j = 0; j < kColsPer; ++j) {
          const int e = (ty + kRowThreads * i) * kPitchP + tx + kColThreads * j;
          if (pass == 0) {
            dsum[i] += Ps[e] * Ds[e];
          } else {
            Ds[e] = Ps[e] * (Ds[e] - dsum[i]) * scale;
          }
        }
      }
      if (pass == 1) {
        __syncthreads();
        tile_products<G>(Ds, Ks, pk, static_cast<int>(n_max - s0 < kCols ? n_max - s0 : kCols), K, ty, tx, acc);
      }
    }
    if (pass == 0) {
#pragma unroll
      for (int i = 0; i < kRowsPer; ++i) {
        dsum[i] = row_sum(dsum[i]);
        const std::int64_t t = t0 + ty + kRowThreads * i;
        if (t < Tq && tx == 0) delta[bh * Tq + t] = dsum[i];
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kRowsPer; ++i) {
    const std::int64_t t = t0 + ty + kRowThreads * i;
    if (t < Tq) store_row<T, G>(dq + b * a.q_batch_stride + t * a.q_row_stride + h * K, acc[i], 1.f, K, tx);
  }
}

// Block (b, h, keys s0 .. s0 + 31): dk and dv rows, summed over the queries that see each key, in
// query order, a tile of 64 queries at a time.
//   shared: K [32][odd K], V [32][odd Kv], Q [64][odd K], dout [64][odd Kv], dropped p [32][65],
//   dscore [32][65], lse [64], delta [64]
template <typename T, int G>
__global__ void __launch_bounds__(kThreads, kBackwardBlocks<G>)
    tiled_dkv_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths, float scale,
                     Dropout<float> drop, const float* lse, const T* dout, const float* delta, T* dk, T* dv) {
  const int K = static_cast<int>(a.key_size), Kv = static_cast<int>(a.value_size), pk = odd(K), pv = odd(Kv);
  const std::int64_t Tq = a.queries, S = a.keys;
  float* Ks = tile_shared;
  float* Vs = Ks + kRows * pk;
  float* Qs = Vs + kRows * pv;
  float* Os = Qs + kCols * pk;
  float* Pd = Os + kCols * pv;
  float* Ds = Pd + kRows * kPitchP;
  float* Ls = Ds + kRows * kPitchP;
  float* Dl = Ls + kCols;
  const std::int64_t tiles = (S + kRows - 1) / kRows, bh = blockIdx.x / tiles, s0 = blockIdx.x % tiles * kRows;
  const std::int64_t b = bh / a.heads, h = bh % a.heads;
  const int tx = static_cast<int>(threadIdx.x) % kColThreads, ty = static_cast<int>(threadIdx.x) / kColThreads;
  const std::int32_t length = key_lengths[b];
  const std::int64_t n_keys = length < S ? (length > 0 ? length : 0) : S;
  // Query t sees key s when s < n_keys and (causal) s <= query_offset + t: the first query that sees
  // the block's first key sees them all from there on, or none (keys past the length: zeros).
  const std::int64_t t_begin = s0 >= n_keys ? Tq : a.causal && s0 - a.query_offset > 0 ? s0 - a.query_offset : 0;
  float ak[kRowsPer][G], av[kRowsPer][G];
#pragma unroll
  for (int i = 0; i < kRowsPer; ++i) {
#pragma unroll
    for (int g = 0; g < G; ++g) ak[i][g] = av[i][g] = 0.f;
  }
  load_tile(Ks, kRows, pk, k + b * a.k_batch_stride + h * K, a.k_row_stride, s0, S, K);
  load_tile(Vs, kRows, pv, v + b * a.v_batch_stride + h * Kv, a.v_row_stride, s0, S, Kv);
  const T* qb = q + b * a.q_batch_stride + h * K;
  const T* ob = dout + b * a.out_batch_stride + h * Kv;
  for (std::int64_t t0 = t_begin; t0 < Tq; t0 += kCols) {
    __syncthreads();
    load_tile(Qs, kCols, pk, qb + t0 * a.q_row_stride, a.q_row_stride, 0, Tq - t0, K);
    load_tile(Os, kCols, pv, ob + t0 * a.out_row_stride, a.out_row_stride, 0, Tq - t0, Kv);
    for (int c = static_cast<int>(threadIdx.x); c < kCols; c += kThreads) {
      const bool in = t0 + c < Tq;
      Ls[c] = in ? lse[bh * Tq + t0 + c] : 0.f;
      Dl[c] = in ? delta[bh * Tq + t0 + c] : 0.f;
    }
    __syncthreads();
    {
      float p[kRowsPer][kColsPer], dp[kRowsPer][kColsPer];
      tile_dots(Ks, pk, Qs, pk, K, ty, tx, Tq - t0, p);
      tile_dots(Vs, pv, Os, pv, Kv, ty, tx, Tq - t0, dp);
      // The raw dot products into the thread's own entries of Pd and Ds, then each entry on its own
      // (a loop, not 16 inlined Philox calls: those spilled registers).
#pragma unroll
      for (int i = 0; i < kRowsPer; ++i) {
#pragma unroll
        for (int j = 0; j < kColsPer; ++j) {
          Pd[(ty + kRowThreads * i) * kPitchP + tx + kColThreads * j] = p[i][j];
          Ds[(ty + kRowThreads * i) * kPitchP + tx + kColThreads * j] = dp[i][j];
        }
      }
    }
#pragma unroll 1
    for (int e = 0; e < kRowsPer * kColsPer; ++e) {
      const int r = ty + kRowThreads * (e / kColsPer), c = tx + kColThreads * (e % kColsPer);
      const std::int64_t s = s0 + r, t = t0 + c;
      const bool visible = t < Tq && s < n_keys && !(a.causal && s > a.query_offset + t);
      const float mask = visible ? drop.mask((bh * Tq + t) * S + s) : 0.f;
      float p = Pd[r * kPitchP + c], dp = Ds[r * kPitchP + c];
      backward_terms(p, dp, visible, scale, Ls[c], mask);
      Pd[r * kPitchP + c] = p * mask;
      Ds[r * kPitchP + c] = visible ? p * (dp - Dl[c]) * scale : 0.f;
    }
    __syncthreads();
    const int cols = static_cast<int>(Tq - t0 < kCols ? Tq - t0 : kCols);
    tile_products<G>(Pd, Os, pv, cols, Kv, ty, tx, av);
    tile_products<G>(Ds, Qs, pk, cols, K, ty, tx, ak);
  }
#pragma unroll
  for (int i = 0; i < kRowsPer; ++i) {
    const std::int64_t s = s0 + ty + kRowThreads * i;
    if (s >= S) continue;
    store_row<T, G>(dk + b * a.k_batch_stride + s * a.k_row_stride + h * K, ak[i], 1.f, K, tx);
    store_row<T, G>(dv + b * a.v_batch_stride + s * a.v_row_stride + h * Kv, av[i], 1.f, Kv, tx);
  }
}

// Shared bytes of each kernel for K and Kv.
std::size_t forward_bytes(std::int64_t K, std::int64_t Kv) {
  return sizeof(float) * static_cast<std::size_t>(kRows * odd(K) + kCols * odd(K) + kCols * Kv + kRows * kPitchP);
}
std::size_t dq_bytes(std::int64_t K, std::int64_t Kv) {
  return sizeof(float) * static_cast<std::size_t>((kRows + kCols) * odd(K) + (kRows + kCols) * odd(Kv) +
                                                  2 * kRows * kPitchP + 2 * kRows);
}
std::size_t dkv_bytes(std::int64_t K, std::int64_t Kv) {
  return sizeof(float) * static_cast<std::size_t>((kRows + kCols) * odd(K) + (kRows + kCols) * odd(Kv) +
                                                  2 * kRows * kPitchP + 2 * kCols);
}

// Launches kernel with `bytes` of dynamic shared memory, one block per tile.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), std::int64_t blocks, std::size_t bytes, Stream stream, Args... args) {
  launch_blocks(kernel, blocks, kThreads, bytes, stream, "tiles", args...);
}

std::int64_t tiles(std::int64_t rows) { return (rows + kRows - 1) / kRows; }

}  // namespace

template <typename T>
bool tiled_attention_takes(const AttentionShape& a) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    if (a.key_size < 1 || a.key_size > kMaxSize || a.value_size < 1 || a.value_size > kMaxSize) return false;
    const std::size_t most = std::max({forward_bytes(a.key_size, a.value_size), dq_bytes(a.key_size, a.value_size),
                                       dkv_bytes(a.key_size, a.value_size)});
    return most <= kDefaultShared || most <= device_shared_limit();
  }
}

template <typename T>
void tiled_attention_forward(const AttentionShape& a, const T* q, const T* k, const T* v,
                             const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                             std::uint64_t rng_stream, float* lse, T* out, Stream stream) {
  const std::int64_t blocks = a.batch * a.heads * tiles(a.queries);
  const std::size_t bytes = forward_bytes(a.key_size, a.value_size);
  const Dropout<float> drop = dropout_of<float>(dropout_p, seed, rng_stream);
  const auto kernel =
      std::max(a.key_size, a.value_size) <= 64 ? tiled_forward_kernel<T, 4> : tiled_forward_kernel<T, 8>;
  launch(kernel, blocks, bytes, stream, a, q, k, v, key_lengths, static_cast<float>(scale), drop, lse, out);
}

template <typename T>
void tiled_attention_backward(const AttentionShape& a, const T* q, const T* k, const T* v,
                              const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                              std::uint64_t rng_stream, const float* lse, const T* dout, T* dq, T* dk, T* dv,
                              float* workspace, Stream stream) {
  const Dropout<float> drop = dropout_of<float>(dropout_p, seed, rng_stream);
  const float scale_f = static_cast<float>(scale);
  const bool narrow = std::max(a.key_size, a.value_size) <= 64;
  const auto dq_kernel = narrow ? tiled_dq_kernel<T, 4> : tiled_dq_kernel<T, 8>;
  const auto dkv_kernel = narrow ? tiled_dkv_kernel<T, 4> : tiled_dkv_kernel<T, 8>;
  launch(dq_kernel, a.batch * a.heads * tiles(a.queries), dq_bytes(a.key_size, a.value_size), stream, a, q, k, v,
         key_lengths, scale_f, drop, lse, dout, dq, workspace);
  launch(dkv_kernel, a.batch * a.heads * tiles(a.keys), dkv_bytes(a.key_size, a.value_size), stream, a, q, k, v,
         key_lengths, scale_f, drop, lse, dout, static_cast<const float*>(workspace), dk, dv);
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                       \
  template bool tiled_attention_takes<T>(const AttentionShape&);                                                      \
  template void tiled_attention_forward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*,  \
                                           double, double, std::uint64_t, std::uint64_t, float*, T*, Stream);         \
  template void tiled_attention_backward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*, \
                                            double, double, std::uint64_t, std::uint64_t, const float*, const T*, T*, \
                                            T*, T*, float*, Stream);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE
template bool tiled_attention_takes<double>(const AttentionShape&);

}  // namespace dragoman::cuda::attention_detail
