// Adam on CUDA, the twin of kernels/cpu/adam.h: same arguments plus a stream. One thread per
// element runs the CPU spec's update (kernels/common/adam.h: moments in T, the step in double,
// the bias corrections computed once on the host), so master weights, moments and the mirror get
// the CPU's bits exactly. Element-wise: no reduction, any launch shape gives the same result.
// All pointers are device memory of the stream's device (the caller holds its DeviceGuard).
#pragma once

#include <cstdint>

#include "base/half.h"
#include "kernels/cpu/adam.h"  // AdamHyper (a plain struct)
#include "device/cuda/stream.h"

namespace dragoman::cuda {

// param, grad, m, v: [n]; T = float or double. grad_factor: one double in device memory (the
// factor of ops::grad_norm_factor, read by the kernel: no host wait) or null (1), as the CPU's
// grad_factor: each gradient times it, rounded to T; a non-finite one leaves everything untouched.
template <typename T>
void adam_step(T* param, const T* grad, T* m, T* v, std::int64_t n, const cpu::AdamHyper& hyper,
               const double* grad_factor, Stream stream);

// The same update, and mirror[i] = the new param[i] rounded once to M (bf16 or f16) in the same pass.
//   mirror: [n]
template <typename M>
void adam_step(float* param, const float* grad, float* m, float* v, std::int64_t n, const cpu::AdamHyper& hyper,
               M* mirror, const double* grad_factor, Stream stream);

}  // namespace dragoman::cuda
