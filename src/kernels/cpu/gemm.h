// Matrix multiplication on the CPU through OpenBLAS (cblas_sgemm / cblas_dgemm), row-major:
//   C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C[m, n]
// with op(X) = X or X^T, and leading dimensions (row strides) lda, ldb, ldc in elements.
// OpenBLAS threads internally (set_gemm_threads); results may differ in the last bits between
// thread counts, never between runs with the same count.
#pragma once

#include <cstdint>

namespace dragoman::cpu {

template <typename T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc);

// The same for `batch` independent products at fixed element strides between them.
template <typename T>
void gemm_strided_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                          const T* a, std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                          std::int64_t stride_b, T beta, T* c, std::int64_t ldc, std::int64_t stride_c,
                          std::int64_t batch);

void set_gemm_threads(int threads);

}  // namespace dragoman::cpu
