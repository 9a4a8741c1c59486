// Layer normalisation over the last dimension D, the CPU spec. T is the storage type of x, weight,
// bias, y, dy and dx: double, float, bf16 or f16; A = acc_t<T> (double for double, float otherwise)
// is the type of everything else (base/numeric.h):
//   mean = sum(x) / D, var = sum((x - mean)^2) / D (biased), rstd = 1 / sqrt(var + eps)
//   y = (x - mean) * rstd * weight + bias
// Forward: the row sums, mean and rstd are computed in A (sums in index order; f32's in the 16 lanes
// of kernels/cpu/vector_math.h, the same bits at every instruction-set level); mean and rstd are
// stored in A (statistics, no rounding to T); each y element is computed in A and rounded once.
// Backward: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight, the row sums
// in A (f32's in lanes, as the forward's), each dx element rounded once; dweight and dbias (parameter gradients, A)
// accumulate (+=) column sums in row order, so the result does not depend on the thread count.
#pragma once

#include <cstdint>

#include "base/numeric.h"

namespace dragoman::cpu {

// x, y: [rows, D]; weight, bias: [D]; mean, rstd: [rows] (saved for the backward pass).
template <typename T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, acc_t<T>* mean, acc_t<T>* rstd,
                        std::int64_t rows, std::int64_t d, double eps);

// y = layer norm of (x + residual), the sum rounded to T as cpu::add rounds it: the same bits as
// cpu::add then layer_norm_forward, in one pass over each row and without the statistics
// (decoding's post-norm residual blocks).   x, residual, y: [rows, D]
template <typename T>
void add_layer_norm_forward(const T* x, const T* residual, const T* weight, const T* bias, T* y, std::int64_t rows,
                            std::int64_t d, double eps);

// dy, x, dx: [rows, D]; weight: [D]; mean, rstd: [rows]; dweight, dbias: [D] (+=).
template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* weight, const acc_t<T>* mean, const acc_t<T>* rstd, T* dx,
                         acc_t<T>* dweight, acc_t<T>* dbias, std::int64_t rows, std::int64_t d);

}  // namespace dragoman::cpu
