// Adam on whole buffers (kernels/cpu/adam.h): one call updates every parameter.
#pragma once

#include "core/tensor.h"
#include "kernels/cpu/adam.h"

namespace dragoman::ops {

// param, grad, m, v: same dtype, device and element count, contiguous.
void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const cpu::AdamHyper& hyper);

}  // namespace dragoman::ops
