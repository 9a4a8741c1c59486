// The per-element formulas of layer normalisation, shared by the CPU spec (kernels/cpu/layer_norm.cpp)
// and its CUDA twin (kernels/cuda/layer_norm.cu), so both evaluate the same operations in the same
// order (A = acc_t<T>; the CUDA files are compiled without FMA contraction, see src/CMakeLists.txt).
// Only the row and column sums differ in order between the two (see kernels/layer_norm.h).
#pragma once

#include "base/host_device.h"

namespace dragoman::common {

// y = (x - mean) * rstd * weight + bias, evaluated left to right.
template <typename A>
DRAGOMAN_HOST_DEVICE inline A layer_norm_output(A x, A mean, A rstd, A weight, A bias) {
  return (x - mean) * rstd * weight + bias;
}

// xhat = (x - mean) * rstd.
template <typename A>
DRAGOMAN_HOST_DEVICE inline A layer_norm_xhat(A x, A mean, A rstd) {
  return (x - mean) * rstd;
}

// dx = rstd * (dy * weight - mean(g) - xhat * mean(g * xhat)), g = dy * weight.
template <typename A>
DRAGOMAN_HOST_DEVICE inline A layer_norm_dx(A dy, A weight, A xhat, A rstd, A g_mean, A gx_mean) {
  return rstd * (dy * weight - g_mean - xhat * gx_mean);
}

// The row's term of dweight: dy * (x - mean) * rstd, evaluated left to right (not dy * xhat: the
// spec's order).
template <typename A>
DRAGOMAN_HOST_DEVICE inline A layer_norm_dweight_term(A dy, A x, A mean, A rstd) {
  return dy * (x - mean) * rstd;
}

}  // namespace dragoman::common
