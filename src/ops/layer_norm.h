// Layer normalisation over the last dimension (kernels/cpu/layer_norm.h).
#pragma once

#include "core/tensor.h"

namespace dragoman::ops {

// What the backward pass needs from the forward pass.
struct LayerNormSaved {
  Tensor mean;  // [rows]
  Tensor rstd;  // [rows]
};

// x: [..., D]; weight, bias: [D] -> [..., D]. Fills *saved when given.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, LayerNormSaved* saved);

// Returns dx; dweight += ..., dbias += ...
Tensor layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const LayerNormSaved& saved,
                           const Tensor& dweight, const Tensor& dbias);

}  // namespace dragoman::ops
