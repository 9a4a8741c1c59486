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
// set_compute_threads in device/cpu/threads.h); the widening loops run on OpenMP threads between their calls, never
// around them. Results may differ in the last bits between libraries and thread counts, never between runs with the
// same ones.
//
// CUDA (namespace cuda):
// Matrix multiplication on CUDA through cuBLASLt, the twins of the CPU spec above (same names, same
// arguments, plus the device whose context runs them), and the weight-gradient product that also
// gives the bias gradient (gemm_bias_grad: cuBLASLt's BGRADB epilogue).
//
// Row-major, as on the CPU:  C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C[m, n], with
// op(X) = X or X^T and leading dimensions (row strides) lda, ldb, ldc in elements. T (A and B) is
// float, bf16 or f16 (no f64 on CUDA); C is T, or float for bf16/f16 (a parameter gradient
// accumulated in fp32 with beta = 1). The products are summed in float (CUBLAS_COMPUTE_32F, never
// TF32) and each element of C is rounded once. The summation order is cuBLASLt's, not
// OpenBLAS's: results agree with the CPU within a tolerance that grows with k, not bit for bit.
// With the same algorithm, cuBLASLt is deterministic on one GPU model; an algorithm is chosen once per
// problem (the heuristic cache in gemm.cpp), so a product repeats bit for bit within a process.
//
// All of it runs asynchronously on the device's context stream (device/cuda/context.h), with its
// cuBLASLt handle and workspace; the caller holds a DeviceGuard for `device`. Pointers are device
// memory of that device. Throws dragoman::Error when cuBLASLt has no algorithm for the problem.
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
// is cpu::bias_backward (kernels/elementwise.h).
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

namespace dragoman::cuda {

template <typename T, typename C>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, acc_t<T> alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, acc_t<T> beta, C* c, std::int64_t ldc, int device);

// C[m, n] = op(A) op(B) + bias[n] on every row, C contiguous (ldc = n); bias may be null. The bias is
// added to the acc_t<T> sum before C is rounded (cuBLASLt's BIAS epilogue; where the epilogue has no
// algorithm or the bias is not 16-byte aligned, bias rows copied into C and beta = 1, which rounds the
// same way). For float this equals cpu::gemm_bias's product-then-bias_add. With `relu`, C =
// max(C, 0) in the same pass (the RELU_BIAS / RELU epilogue; without an algorithm for it, a ReLU
// kernel over C after the product): rounding commutes with max(., 0), so this equals the CPU's
// cpu::gemm_bias followed by cpu::relu_forward.
template <typename T>
void gemm_bias(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda,
               const T* b, std::int64_t ldb, const T* bias, T* c, int device, bool relu = false);

// The weight gradient of a linear layer with its bias gradient in the same product:
// C[m, n] += A^T B (A [k, m] with row stride lda, B [k, n] with ldb; C of acc_t<T>, row stride ldc)
// as gemm<T, acc_t<T>>(true, false, ..., beta = 1) does, and bias_grad[i] = the sum over k of A[., i]
// (the column sums of A, that is of dy), written, not added, in acc_t<T>. That is cuBLASLt's BGRADB
// epilogue: the column sums come from the tiles the product loads anyway, so dy is not read a
// second time. Its order of summation is cuBLASLt's (a tolerance from cpu::bias_backward's, not
// bits; the same bits on every call, the algorithm being chosen once per problem). Returns false,
// with nothing run, where cuBLASLt has no algorithm for it (or k == 0, m or n not a multiple of 8,
// or bias_grad not 16-byte aligned): the caller then runs gemm and bias_backward
// (kernels/elementwise.h).
template <typename T>
bool gemm_bias_grad(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, const T* b,
                    std::int64_t ldb, acc_t<T>* c, std::int64_t ldc, acc_t<T>* bias_grad, int device);

// The ReLU mask of cuBLASLt's RELU_AUX epilogues: one bit per element of a C [m, n] (1 where the
// ReLU's input was positive), in m rows of relu_mask_bits(n) bits (n rounded up to 128, cuBLASLt's
// rule for the mask's leading dimension), so relu_mask_bytes(m, n) bytes, at least
// kReluMaskAlignment-aligned. Its bit order is cuBLASLt's own: only gemm_drelu reads it.
inline constexpr std::uint32_t kReluMaskAlignment = 256;
inline std::int64_t relu_mask_bits(std::int64_t n) { return (n + 127) / 128 * 128; }
inline std::int64_t relu_mask_bytes(std::int64_t m, std::int64_t n) { return m * relu_mask_bits(n) / 8; }

// gemm_bias with relu = true (C[m, n] = max(op(A) op(B) + bias, 0), bias may be null), also writing
// the ReLU mask of C's elements (cuBLASLt's RELU_AUX_BIAS / RELU_AUX epilogue). C equals
// gemm_bias's. Returns false, with nothing run, where cuBLASLt has no algorithm for it (or k == 0,
// or the mask or the bias is not aligned): the caller then runs gemm_bias and has no mask.
template <typename T>
bool gemm_bias_relu_mask(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                         std::int64_t lda, const T* b, std::int64_t ldb, const T* bias, T* c, void* mask, int device);

// C[m, n] = op(A) op(B) where the mask's bit is set, 0 elsewhere (C contiguous, beta = 0): the input
// gradient of a linear layer whose input was a ReLU's output, with the ReLU's gradient applied in the
// product's epilogue (cuBLASLt's DRELU) instead of by relu_backward's pass over it; `mask` is the
// one gemm_bias_relu_mask wrote for the ReLU's output [m, n]. Each element is rounded once, so C is
// relu_backward(y, gemm(...)) wherever the ReLU's input and its rounded output y agree in being
// positive (they differ only where a positive input rounds to 0 in T: below T's smallest
// subnormal). Returns false, with nothing run, where cuBLASLt has no algorithm for it.
template <typename T>
bool gemm_drelu(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                std::int64_t lda, const T* b, std::int64_t ldb, T* c, const void* mask, int device);

// Whether training's backward uses cuBLASLt's epilogues on CUDA (ops::linear_backward,
// ops::linear_relu_masked, ops::linear_backward_relu):
//   automatic: where cuBLASLt has an algorithm for them: a linear layer's bias gradient from its
//     weight gradient's product (gemm_bias_grad), and the feed-forward ReLU's gradient from the
//     product of its input gradient (gemm_bias_relu_mask in the forward, gemm_drelu); elsewhere
//     bias_backward's two-pass column sums and relu_backward;
//   off: always bias_backward and relu_backward (for comparison, or should an epilogue misbehave
//     on some GPU).
// The first call reads DRAGOMAN_CUDA_GRAD_EPILOGUES (auto or off; anything else is an error);
// set_grad_epilogues overrides it for the process (tests, benchmarks).
enum class GradEpilogues { automatic, off };
GradEpilogues grad_epilogues();
void set_grad_epilogues(GradEpilogues epilogues);

// gemm (C of T) for `batch` independent products at fixed element strides between them.
template <typename T>
void gemm_strided_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, acc_t<T> alpha,
                          const T* a, std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                          std::int64_t stride_b, acc_t<T> beta, T* c, std::int64_t ldc, std::int64_t stride_c,
                          std::int64_t batch, int device);

}  // namespace dragoman::cuda
