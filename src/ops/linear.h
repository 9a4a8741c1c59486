// Linear layers and matrix products on tensors (CPU: OpenBLAS).
#pragma once

#include "core/tensor.h"

namespace dragoman::ops {

// op(a) op(b) for 2-D a and b.   a: [M, K] (or [K, M] when trans_a), b: [K, N] (or [N, K])
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// y = x W^T + bias, over the last dimension.   x: [..., in], weight: [out, in], bias: [out] or
// undefined -> y: [..., out]
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

// Backward of linear: dweight += dy^T x, dbias += sum of dy's rows (when defined), and
// returns dx = dy W (or an undefined tensor when need_dx is false).
Tensor linear_backward(const Tensor& x, const Tensor& weight, const Tensor& dy, const Tensor& dweight, const Tensor& dbias,
                       bool need_dx = true);

}  // namespace dragoman::ops
