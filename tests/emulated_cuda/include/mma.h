// The host emulation's stand-in for CUDA's mma.h (tests/emulated_cuda/emulated_cuda.h): WMMA's
// 16 x 16 x 16 fragments for bf16/f16 with float accumulators. Each lane of a warp holds a whole
// tile (a fragment's distribution over the lanes is opaque to the kernels, which only load, multiply
// and store whole fragments) and lane 0 stores it; a product sums k in order in float. Every call
// checks what the hardware requires: all 32 lanes of the warp make it (counted, compared at the next
// barrier), the pointer is 256-bit aligned, ldm is a multiple of 16 bytes, and the tile lies inside
// the block's dynamic shared memory (the only memory the kernels give WMMA).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "base/half.h"
#include "emulated_cuda/emulated_cuda.h"

namespace nvcuda::wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulation has 16 x 16 x 16 tiles only");
  float x[16][16];
};

namespace detail {

inline float to_float(__nv_bfloat16 v) { return dragoman::bf16::from_bits(v.x).to_float(); }
inline float to_float(__half v) { return dragoman::f16::from_bits(v.x).to_float(); }

// The hardware's requirements of a 16 x 16 tile of `element` bytes at p with leading dimension ldm.
inline void check_tile(const void* p, unsigned ldm, std::size_t element, const char* call) {
  dragoman::emulation::count_wmma_call();
  dragoman::emulation::require(reinterpret_cast<std::uintptr_t>(p) % 32 == 0, call, "a pointer not 256-bit aligned");
  dragoman::emulation::require(ldm * element % 16 == 0, call, "ldm not a multiple of 16 bytes");
  dragoman::emulation::require_shared(p, (15 * static_cast<std::size_t>(ldm) + 16) * element, call);
}

}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, float value) {
  for (auto& row : f.x) {
    for (float& e : row) e = value;
  }
}

// A or B (16-bit elements): element (i, j) at p[i * ldm + j] (row_major) or p[j * ldm + i] (col_major).
template <class Use, class T, class Layout, class W>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& f, const W* p, unsigned ldm) {
  static_assert(sizeof(W) == 2 && !std::is_same_v<Use, accumulator>, "A and B fragments of 16-bit elements");
  detail::check_tile(p, ldm, sizeof(W), "wmma::load_matrix_sync (A or B)");
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      f.x[i][j] = detail::to_float(std::is_same_v<Layout, row_major> ? p[i * ldm + j] : p[j * ldm + i]);
    }
  }
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm, layout_t l) {
  detail::check_tile(p, ldm, sizeof(float), "wmma::load_matrix_sync (accumulator)");
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) f.x[i][j] = l == mem_row_major ? p[i * ldm + j] : p[j * ldm + i];
  }
}

// d = a b + c, each element's sum over k in order, in float.
template <class TA, class LA, class TB, class LB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, TA, LA>& a,
              const fragment<matrix_b, 16, 16, 16, TB, LB>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
  dragoman::emulation::count_wmma_call();
  float r[16][16];
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      float s = c.x[i][j];
      for (int k = 0; k < 16; ++k) s += a.x[i][k] * b.x[k][j];
      r[i][j] = s;
    }
  }
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) d.x[i][j] = r[i][j];
  }
}

// Lane 0 writes the tile (every lane holds the same one) once the warp has met: every lane has then
// read what the warp loaded before (an accumulator tile loaded from the same place, for one). The
// kernels read a stored tile only after a barrier, as on the hardware.
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm, layout_t l) {
  detail::check_tile(p, ldm, sizeof(float), "wmma::store_matrix_sync");
  dragoman::emulation::warp_sync("wmma::store_matrix_sync");
  if (dragoman::emulation::lane() == 0) {
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 16; ++j) (l == mem_row_major ? p[i * ldm + j] : p[j * ldm + i]) = f.x[i][j];
    }
  }
}

}  // namespace nvcuda::wmma
