// Adam (Kingma & Ba) with optional decoupled weight decay (AdamW), the CPU spec. With step t >= 1:
//   m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
//   param -= lr * ( (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay * param )
// The master parameters, their gradients and both moments share one dtype, T = float or double (the
// accumulator dtype); mixed precision keeps fp32 masters and refreshes their bf16/f16 mirror in the
// same pass. Element-wise, so any split gives the same bits.
#pragma once

#include <cstdint>

#include "base/half.h"

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
