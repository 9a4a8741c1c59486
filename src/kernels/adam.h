// Adam (Kingma & Ba) with optional decoupled weight decay (AdamW), the CPU spec. With step t >= 1:
//   m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
//   param -= lr * ( (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay * param )
// The master parameters, their gradients and both moments share one dtype, T = float or double (the
// accumulator dtype); mixed precision keeps fp32 masters and refreshes their bf16/f16 mirror in the
// same pass. Element-wise, so any split gives the same bits.
//
// CUDA (namespace cuda):
// Adam on CUDA, the twin of the CPU spec above: same arguments plus a stream. One thread per
// element runs the CPU spec's update (kernels/common/adam.h: moments in T, the step in double,
// the bias corrections computed once on the host), so master weights, moments and the mirror get
// the CPU's bits exactly. Element-wise: no reduction, any launch shape gives the same result.
// All pointers are device memory of the stream's device (the caller holds its DeviceGuard).
#pragma once

#include <cstdint>

#include "base/half.h"
#include "device/cuda/stream.h"

namespace dragoman::cpu {

struct AdamHyper {
  double lr = 0, beta1 = 0.9, beta2 = 0.98, eps = 1e-9, weight_decay = 0;
  std::int64_t step = 1;
};

// param, grad, m, v: [n]. grad_factor (ops::grad_norm_factor's factor: unscaling, clipping)
// multiplies each gradient first, rounded to T: the bits of scaling the gradients by it (cpu::scale)
// before the update; a non-finite factor (a non-finite gradient norm) leaves everything untouched.
template <typename T>
void adam_step(T* param, const T* grad, T* m, T* v, std::int64_t n, const AdamHyper& hyper, double grad_factor = 1.0);

// The same update of fp32 masters, and mirror[i] = store<M>(new param[i]) (rounded once, to nearest
// even) in the same pass: the compute-dtype copy the forward pass reads. M = bf16 or f16. The
// masters and moments get the same bits as without a mirror.   mirror: [n]
template <typename M>
void adam_step(float* param, const float* grad, float* m, float* v, std::int64_t n, const AdamHyper& hyper, M* mirror,
               double grad_factor = 1.0);

}  // namespace dragoman::cpu

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
