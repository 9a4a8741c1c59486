// Adam on whole buffers (kernels/adam.h): one call updates every parameter.
#pragma once

#include "core/tensor.h"
#include "kernels/adam.h"

namespace dragoman::ops {

using AdamHyper = cpu::AdamHyper;  // lr, betas, eps, weight decay, step (kernels/adam.h)

// param, grad, m, v: same dtype (f32 or f64), device and element count, contiguous.
void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const cpu::AdamHyper& hyper);

// The same update of f32 master weights, and in the same pass *mirror = the new param rounded once
// to mirror's dtype (bf16 or f16, same element count and device, contiguous): the compute-dtype
// weights the forward pass reads. param, m, v get the same bits as without a mirror. A null mirror
// is the call above.
// grad_factor: ops::grad_norm_factor's {norm, factor} (f64 [2] on param's device), or null. Each
// gradient is multiplied by the factor first (the bits of ops::scale_ by it, then the update), read
// where it is: on a GPU the update then waits for nothing on the host. A non-finite factor (a
// non-finite gradient norm) leaves param, m, v and the mirror untouched.
void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const cpu::AdamHyper& hyper, Tensor* mirror,
               const Tensor* grad_factor = nullptr);

}  // namespace dragoman::ops
