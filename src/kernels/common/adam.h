// The per-element Adam update, shared by the CPU spec (kernels/cpu/adam.cpp) and its CUDA twin
// (kernels/cuda/adam.cu), with the scalars both derive from AdamHyper on the host (the bias
// corrections use std::pow once per step, never on the device). The moments are updated in T, the
// step is computed in double and the new parameter rounded once to T, so CPU and CUDA agree bit for
// bit (IEEE division and square root on both, no FMA contraction in the CUDA files).
#pragma once

#include <cmath>
#include <cstdint>

#include "base/host_device.h"

namespace dragoman::common {

template <typename T>
struct AdamScalars {
  T beta1, beta2, one_minus_beta1, one_minus_beta2;  // in T, as the moments are updated
  double correction1, correction2;                   // 1 - beta^step
  double lr, eps, weight_decay;
};

// The scalars of step `step` (>= 1).
template <typename T>
AdamScalars<T> adam_scalars(double lr, double beta1, double beta2, double eps, double weight_decay, std::int64_t step) {
  const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
  return {b1,
          b2,
          T(1) - b1,
          T(1) - b2,
          1.0 - std::pow(beta1, static_cast<double>(step)),
          1.0 - std::pow(beta2, static_cast<double>(step)),
          lr,
          eps,
          weight_decay};
}

// Updates m and v with the gradient g and returns the new parameter:
//   m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
//   param - lr * ((m / c1) / (sqrt(v / c2) + eps) + weight_decay * param), rounded once to T
template <typename T>
DRAGOMAN_HOST_DEVICE inline T adam_update(T param, T g, T& m, T& v, const AdamScalars<T>& s) {
  m = s.beta1 * m + s.one_minus_beta1 * g;
  v = s.beta2 * v + s.one_minus_beta2 * g * g;
  const double step = (m / s.correction1) / (sqrt(v / s.correction2) + s.eps) + s.weight_decay * param;
  return static_cast<T>(param - s.lr * step);
}

}  // namespace dragoman::common
