// Muon on weight matrices (kernels/cpu/muon.h). CPU only so far: a CUDA tensor is an error
// (training refuses training.optimizer muon on a GPU before it starts).
#pragma once

#include <vector>

#include "core/tensor.h"
#include "kernels/cpu/muon.h"

namespace dragoman::ops {

using MuonHyper = cpu::MuonHyper;  // kernels/cpu/muon.h

// One matrix: param, grad, momentum 2-D [rows, cols], same dtype (f32 or f64), device and shape,
// contiguous (views into the flat buffers of a ParameterSet are).
struct MuonTensors {
  Tensor param, grad, momentum;
};

// One Muon update of every matrix (cpu::muon_steps: spread over the threads); every operand is
// checked before any is written.
void muon_step(std::vector<MuonTensors>& matrices, const cpu::MuonHyper& hyper);

}  // namespace dragoman::ops
