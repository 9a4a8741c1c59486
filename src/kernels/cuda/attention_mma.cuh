// Device helpers of the tensor-core attention kernels (attention_mma.cu: one block a head for up to 64
// queries and keys; attention_flash.cu: blocks of 64 rows walking the other side in tiles of 64): the
// WMMA type of bf16/f16, shared-memory layouts, row copies into shared memory, warp reductions, the
// block's product of shared matrices on tensor cores and the rows' stores. Every block has
// kThreads threads. Private to kernels/cuda/attention_mma.cu and attention_flash.cu.
//
// The two files also compile as host C++ under DRAGOMAN_CUDA_EMULATION, where
// tests/emulated_cuda/ stands in for CUDA (a block's threads as std::threads, WMMA's tiles as float
// loops), so that the CPU suite runs these kernels' own source against the CPU spec
// (tests/kernels/test_attention_emulated.cpp). Hence the two macros below.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "base/numeric.h"

// Whether this compilation has the kernels' bodies: device code for sm_80 or later (bf16 WMMA), or
// the host emulation. (nvcc's host pass and older architectures: empty kernels, which trap.)
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(DRAGOMAN_CUDA_EMULATION)
#define DRAGOMAN_WMMA_KERNELS 1
#else
#define DRAGOMAN_WMMA_KERNELS 0
#endif

// The block's dynamic shared memory as `unsigned char name[]`, 128-byte aligned (the emulator's
// buffer for the block under emulation).
#if defined(DRAGOMAN_CUDA_EMULATION)
#define DRAGOMAN_DYNAMIC_SHARED(name) unsigned char* name = ::dragoman::emulation::dynamic_shared()
#else
#define DRAGOMAN_DYNAMIC_SHARED(name) extern __shared__ __align__(128) unsigned char name[]
#endif

namespace dragoman::cuda::attention_detail::mma {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 16;      // WMMA's m, n and k
constexpr int kMaxSize = 128;  // K and Kv
constexpr int kCopyBatch = 4;  // 16-byte loads in flight a thread while filling shared memory

// The CUDA type WMMA multiplies for T (the same 16 bits).
template <typename T>
struct Wmma;
template <>
struct Wmma<bf16> {
  using type = __nv_bfloat16;
};
template <>
struct Wmma<f16> {
  using type = __half;
};

__host__ __device__ constexpr int round_tile(std::int64_t n) {
  return static_cast<int>((n + kTile - 1) / kTile * kTile);
}
__host__ __device__ constexpr int round_up(int n, int to) { return (n + to - 1) / to * to; }

// The next array of a block's dynamic shared memory: its byte offset (at, then at moves past it,
// rounded up to 128 bytes, so that every array and every WMMA tile in it is 32-byte aligned).
__host__ __device__ inline int take(int& at, int bytes) {
  const int offset = at;
  at += round_up(bytes, 128);
  return offset;
}

// Whether K and Kv are head sizes the tensor-core kernels take: multiples of 16 up to 128.
__host__ __device__ inline bool head_sizes_taken(std::int64_t key_size, std::int64_t value_size) {
  for (const std::int64_t size : {key_size, value_size}) {
    if (size < kTile || size > kMaxSize || size % kTile != 0) return false;
  }
  return true;
}

// Rows [0, padded_rows) of `size` elements (a multiple of 16) into a shared array of pitch ld: rows
// [0, rows) from src (row stride `stride`), the others zeros (a key past the length must add 0, not
// 0 times whatever lies there). 16 bytes a load where src allows, kCopyBatch loads in flight.
template <typename T>
__device__ void copy_rows(T* dst, int ld, const T* src, std::int64_t stride, std::int64_t rows, int padded_rows,
                          int size) {
  constexpr int kVector = 16 / static_cast<int>(sizeof(T));
  if (stride % kVector == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0) {
    const int per_row = size / kVector, n = padded_rows * per_row;
    for (int e0 = static_cast<int>(threadIdx.x); e0 < n; e0 += kThreads * kCopyBatch) {
      uint4 x[kCopyBatch];
#pragma unroll
      for (int u = 0; u < kCopyBatch; ++u) {
        const int e = e0 + u * kThreads, r = e / per_row;
        x[u] = make_uint4(0u, 0u, 0u, 0u);
        if (e < n && r < rows) x[u] = *reinterpret_cast<const uint4*>(src + r * stride + (e - r * per_row) * kVector);
      }
#pragma unroll
      for (int u = 0; u < kCopyBatch; ++u) {
        const int e = e0 + u * kThreads, r = e / per_row;
        if (e < n) *reinterpret_cast<uint4*>(dst + r * ld + (e - r * per_row) * kVector) = x[u];
      }
    }
    return;
  }
  const int n = padded_rows * size;
  for (int e = static_cast<int>(threadIdx.x); e < n; e += kThreads) {
    const int r = e / size, d = e - r * size;
    dst[r * ld + d] = r < rows ? src[r * stride + d] : T();
  }
}

// The butterfly maximum and sum over a warp: every lane combines the same pairs, so all hold the
// same bits.
__device__ inline float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, o));
  return x;
}
__device__ inline float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xFFFFFFFFu, x, o);
  return x;
}

// C[M, N] = A[M, Kd] B[Kd, N] (with Accumulate: C += A B, C read from c first) for one block, M, N and
// Kd multiples of 16: the warps take the 16 x 16 tiles of C in turn (warp w the tiles w, w + 4, ...:
// the same warp every call, so the order of every element's sum is fixed), each summed over Kd in
// order, and store them as float into c (pitch ldc). A is row-major at a (pitch lda) or, with
// ATransposed, column-major (A = a^T: a holds A's columns as rows); B is row-major at b (pitch ldb)
// or, with BTransposed, column-major.
template <typename T, bool ATransposed, bool BTransposed, bool Accumulate = false>
__device__ void block_product(const T* a, int lda, const T* b, int ldb, float* c, int ldc, int M, int N, int Kd) {
  namespace wmma = nvcuda::wmma;
  using W = typename Wmma<T>::type;
  using LayoutA = std::conditional_t<ATransposed, wmma::col_major, wmma::row_major>;
  using LayoutB = std::conditional_t<BTransposed, wmma::col_major, wmma::row_major>;
  const int warp = static_cast<int>(threadIdx.x) / 32, tiles_n = N / kTile;
  for (int tile = warp; tile < (M / kTile) * tiles_n; tile += kWarps) {
    const int i = tile / tiles_n * kTile, j = tile % tiles_n * kTile;
    wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> acc;
    if constexpr (Accumulate) {
      wmma::load_matrix_sync(acc, c + i * ldc + j, ldc, wmma::mem_row_major);
    } else {
      wmma::fill_fragment(acc, 0.f);
    }
    for (int kk = 0; kk < Kd; kk += kTile) {
      wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, W, LayoutA> fa;
      wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, W, LayoutB> fb;
      // Element (m, k) of A: a[m * lda + k] row-major, a[k * lda + m] column-major; (k, n) of B likewise.
      const T* at = ATransposed ? a + kk * lda + i : a + i * lda + kk;
      const T* bt = BTransposed ? b + j * ldb + kk : b + kk * ldb + j;
      wmma::load_matrix_sync(fa, reinterpret_cast<const W*>(at), lda);
      wmma::load_matrix_sync(fb, reinterpret_cast<const W*>(bt), ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + i * ldc + j, acc, ldc, wmma::mem_row_major);
  }
}

// Rows [0, rows) of the float staging array (pitch ld, `size` columns) to dst (row stride `stride`),
// each element rounded once to T, divided by divisor[row] first when divisor is not null.
template <typename T>
__device__ void store_rows(T* dst, std::int64_t stride, const float* staging, int ld, std::int64_t rows, int size,
                           const float* divisor) {
  for (int e = static_cast<int>(threadIdx.x); e < rows * size; e += kThreads) {
    const int r = e / size, d = e - r * size;
    const float x = staging[r * ld + d];
    dst[r * stride + d] = store<T>(divisor != nullptr ? x / divisor[r] : x);
  }
}

// Whether the tensor-core kernels were compiled for the current device's architecture (sm_80 or
// later: a build for an older one leaves them empty, with a trap). Asked once per device
// (attention_mma.cu).
bool device_has_wmma();

}  // namespace dragoman::cuda::attention_detail::mma
