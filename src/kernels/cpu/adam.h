// Adam (Kingma & Ba) with optional decoupled weight decay (AdamW), the CPU spec. With step t >= 1:
//   m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
//   param -= lr * ( (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay * param )
// Moments are kept in the parameter's dtype. Element-wise, so any split gives the same bits.
#pragma once

#include <cstdint>

namespace dragoman::cpu {

struct AdamHyper {
  double lr = 0, beta1 = 0.9, beta2 = 0.98, eps = 1e-9, weight_decay = 0;
  std::int64_t step = 1;
};

// param, grad, m, v: [n]
template <typename T>
void adam_step(T* param, const T* grad, T* m, T* v, std::int64_t n, const AdamHyper& hyper);

}  // namespace dragoman::cpu
