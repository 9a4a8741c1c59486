// Matrix multiplication on CUDA through cuBLASLt, the twins of kernels/cpu/gemm.h (same names, same
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
// All of it runs asynchronously on the device's context stream (kernels/cuda/context.h), with its
// cuBLASLt handle and workspace; the caller holds a DeviceGuard for `device`. Pointers are device
// memory of that device. Throws dragoman::Error when cuBLASLt has no algorithm for the problem.
// Plain C++ header (no CUDA types); the CPU-only build links stubs (no_cuda.cpp).
#pragma once

#include <cstdint>

#include "core/numeric.h"

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
// with nothing run, where cuBLASLt has no algorithm for it (or k == 0, or bias_grad is not 16-byte
// aligned): the caller then runs gemm and bias_backward (kernels/cuda/elementwise.h).
template <typename T>
bool gemm_bias_grad(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, const T* b,
                    std::int64_t ldb, acc_t<T>* c, std::int64_t ldc, acc_t<T>* bias_grad, int device);

// Where a linear layer's bias gradient is summed on CUDA (ops::linear_backward):
//   automatic: in the weight gradient's product (gemm_bias_grad) where cuBLASLt has an algorithm for
//     it, else bias_backward's two-pass column sums;
//   kernel: always bias_backward (for comparison, or should the epilogue misbehave on some GPU).
// The first call reads DRAGOMAN_CUDA_BIAS_GRAD (auto or kernel; anything else is an error);
// set_bias_grad_kernels overrides it for the process (tests, benchmarks).
enum class BiasGradKernels { automatic, kernel };
BiasGradKernels bias_grad_kernels();
void set_bias_grad_kernels(BiasGradKernels kernels);

// gemm (C of T) for `batch` independent products at fixed element strides between them.
template <typename T>
void gemm_strided_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, acc_t<T> alpha,
                          const T* a, std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                          std::int64_t stride_b, acc_t<T> beta, T* c, std::int64_t ldc, std::int64_t stride_c,
                          std::int64_t batch, int device);

}  // namespace dragoman::cuda
