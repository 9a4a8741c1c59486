// Matrix multiplication on the CPU, row-major, the spec of the cuBLASLt calls of the CUDA build:
//   C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C[m, n]
// with op(X) = X or X^T, and leading dimensions (row strides) lda, ldb, ldc in elements.
//
// T, the storage type of A and B, is double, float, bf16 or f16; C is T, or acc_t<T> (float for
// bf16 and f16: a parameter gradient accumulated in fp32 with beta = 1). alpha and beta are acc_t<T>.
//   - T = float: oneDNN's dnnl_sgemm when the build has oneDNN (DRAGOMAN_ONEDNN; kernels generated for
//     the running CPU: AVX-512 where it has it), else OpenBLAS's cblas_sgemm. T = double: cblas_dgemm.
//   - T = bf16, f16: what cuBLASLt does with CUBLAS_COMPUTE_32F. A and B are widened to float exactly,
//     in blocks of at most kGemmBlock x kGemmBlock elements (bounded memory), and the float product
//     above sums them in float into a float tile that starts at beta * C. The tile never rounds
//     between k blocks; a C of T is rounded once, with store<T>(), after the last one. A float C is
//     the tile.
// The libraries thread internally (oneDNN on the caller's OpenMP threads; OpenBLAS by
// set_compute_threads in device/cpu/threads.h); the widening loops run on OpenMP threads between their calls, never around
// them. Results may differ in the last bits between libraries and thread counts, never between runs
// with the same ones.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/numeric.h"

namespace dragoman::cpu {

// The block edge of the widened bf16/f16 operands (elements).
inline constexpr std::int64_t kGemmBlock = 512;

template <typename T, typename C>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, acc_t<T> alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, acc_t<T> beta, C* c, std::int64_t ldc);

// C[m, n] = op(A) op(B) + bias[n] on every row, C contiguous (ldc = n): a linear layer's forward,
// cuBLASLt's BIAS epilogue. For bf16/f16 the bias is added to the float tile and C is rounded once;
// for float/double, C is the product stored, then the bias added (cpu::bias_add). The bias gradient
// is cpu::bias_backward (kernels/cpu/elementwise.h).
template <typename T>
void gemm_bias(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda,
               const T* b, std::int64_t ldb, const T* bias, T* c);

// The same as gemm (C of T) for `batch` independent products at fixed element strides between them.
template <typename T>
void gemm_strided_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, acc_t<T> alpha,
                          const T* a, std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                          std::int64_t stride_b, acc_t<T> beta, T* c, std::int64_t ldc, std::int64_t stride_c,
                          std::int64_t batch);


// Row-invariant products (translate --batch-invariant, docs/DECODING.md): a row of a product's
// result then does not depend on the other rows it is computed with. oneDNN's f32 kernels choose
// their code by the number of rows (m = 1 is a matrix-vector product; on AVX2 the edge tiles and
// the blocking change with m), so the same sentence in another batch could get other last bits.
// When on, f32 products whose rows are those of A (the forward's, cpu::gemm without trans_a, and
// the packed products of packed_gemm.h) run in blocks of exactly kInvariantRows rows, the last
// block padded with zero rows: every row is computed by the same call shape at every batch size.
// Process-wide; off by default (training never sets it).
inline constexpr std::int64_t kInvariantRows = 16;
void set_row_invariant_products(bool on);
bool row_invariant_products();

// Runs product(x_block, y_block) over `rows` rows of x (row stride ldx, `in` used) and y (row
// stride ldy, `out` used) in blocks of exactly kInvariantRows rows. The last block, if short, is
// copied into zero-padded scratch rows with the same strides (its y rows too when read_y: a
// product that adds to y), and its rows copied back.
template <typename X, typename Y, typename F>
void in_invariant_blocks(const X* x, std::int64_t rows, std::int64_t ldx, std::int64_t in, Y* y, std::int64_t ldy,
                         std::int64_t out, bool read_y, F&& product) {
  constexpr std::int64_t kR = kInvariantRows;
  const std::int64_t full = rows / kR * kR;
  for (std::int64_t r = 0; r < full; r += kR) product(x + r * ldx, y + r * ldy);
  const std::int64_t tail = rows - full;
  if (tail == 0) return;
  thread_local std::vector<X> x_pad;
  thread_local std::vector<Y> y_pad;
  x_pad.assign(static_cast<std::size_t>(kR * ldx), X());
  y_pad.assign(static_cast<std::size_t>(kR * ldy), Y());
  for (std::int64_t r = 0; r < tail; ++r) {
    std::copy(x + (full + r) * ldx, x + (full + r) * ldx + in, x_pad.data() + r * ldx);
    if (read_y) std::copy(y + (full + r) * ldy, y + (full + r) * ldy + out, y_pad.data() + r * ldy);
  }
  product(x_pad.data(), y_pad.data());
  for (std::int64_t r = 0; r < tail; ++r) {
    std::copy(y_pad.data() + r * ldy, y_pad.data() + r * ldy + out, y + (full + r) * ldy);
  }
}

}  // namespace dragoman::cpu
