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
// set_gemm_threads); the widening loops run on OpenMP threads between their calls, never around
// them. Results may differ in the last bits between libraries and thread counts, never between runs
// with the same ones.
#pragma once

#include <cstdint>

#include "core/numeric.h"

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

void set_gemm_threads(int threads);

}  // namespace dragoman::cpu
