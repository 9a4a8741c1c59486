// The per-element Swish (SiLU) activation, shared by the CPU spec (kernels/cpu/elementwise.cpp) and
// its CUDA twin (kernels/cuda/elementwise.cu): y = x * s with s = 1 / (1 + exp(-x)), and
// dx = dy * s * (1 + x * (1 - s)), computed in acc_t<T> and rounded once when stored. exp is the
// device's own (std::exp on the CPU, expf on CUDA): twins agree to a few ulps, not bit for bit.
#pragma once

#include <cmath>

#include "base/host_device.h"
#include "base/numeric.h"

namespace dragoman::common {

template <typename A>
DRAGOMAN_HOST_DEVICE inline A sigmoid(A x) {
  using std::exp;
  return A(1) / (A(1) + exp(-x));  // exp(-x) = inf for very negative x: s = 0 exactly
}

template <typename T>
DRAGOMAN_HOST_DEVICE inline T swish_element(T x) {
  const acc_t<T> v = load(x);
  return store<T>(v * sigmoid(v));
}

template <typename T>
DRAGOMAN_HOST_DEVICE inline T swish_backward_element(T x, T dy) {
  const acc_t<T> v = load(x);
  const acc_t<T> s = sigmoid(v);
  return store<T>(load(dy) * (s * (acc_t<T>(1) + v * (acc_t<T>(1) - s))));
}

}  // namespace dragoman::common
