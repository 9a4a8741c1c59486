// Layer normalisation over the last dimension D, the CPU spec:
//   mean = sum(x) / D, var = sum((x - mean)^2) / D (biased), rstd = 1 / sqrt(var + eps)
//   y = (x - mean) * rstd * weight + bias
// Statistics are accumulated in double. Backward: dx assigned; dweight, dbias accumulated
// (column sums in row order, so the result does not depend on the thread count).
#pragma once

#include <cstdint>

namespace dragoman::cpu {

// x, y: [rows, D]; weight, bias: [D]; mean, rstd: [rows] (saved for the backward pass).
template <typename T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, T* mean, T* rstd, std::int64_t rows,
                        std::int64_t d, double eps);

// dy, x, dx: [rows, D]; dweight, dbias: [D] (+=).
template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* weight, const T* mean, const T* rstd, T* dx, T* dweight,
                         T* dbias, std::int64_t rows, std::int64_t d);

}  // namespace dragoman::cpu
