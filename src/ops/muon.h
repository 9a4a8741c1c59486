// Muon on one weight matrix (kernels/cpu/muon.h). CPU only so far: a CUDA tensor is an error
// (training refuses training.optimizer muon on a GPU before it starts).
#pragma once

#include "core/tensor.h"
#include "kernels/cpu/muon.h"

namespace dragoman::ops {

// param, grad, momentum: 2-D [rows, cols], same dtype (f32 or f64), device and shape, contiguous.
void muon_step(Tensor& param, const Tensor& grad, Tensor& momentum, const cpu::MuonHyper& hyper);

}  // namespace dragoman::ops
