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
// All of it runs asynchronously on the device's context stream (device/cuda/context.h), with its
// cuBLASLt handle and workspace; the caller holds a DeviceGuard for `device`. Pointers are device
// memory of that device. Throws dragoman::Error when cuBLASLt has no algorithm for the problem.
// Plain C++ header (no CUDA types); the CPU-only build links stubs (no_cuda.cpp).
#pragma once

#include <cstdint>

#include "base/numeric.h"

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
// (kernels/cuda/elementwise.h).
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
