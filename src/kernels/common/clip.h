// The gradient norm of an update and the factor its gradients are multiplied by before the
// optimizer (unscaling fp16's loss scale, clipping), from their sum of squares. Shared by the
// trainer's host path, the CPU op and its CUDA twin (ops::grad_norm_factor), so that the three give
// the same bits (IEEE square root and division on both sides, no FMA: nothing here can contract).
#pragma once

#include <cmath>

#include "base/host_device.h"

namespace dragoman::common {

struct NormFactor {
  double norm = 0;    // sqrt(sum of squares) / loss_scale
  double factor = 1;  // 1 / loss_scale, times clip_norm / norm when 0 < clip_norm < norm; NaN for a non-finite norm
};

DRAGOMAN_HOST_DEVICE inline NormFactor norm_factor(double sum_squares, double clip_norm, double loss_scale) {
  NormFactor r;
  r.norm = sqrt(sum_squares) / loss_scale;
  r.factor = 1.0 / loss_scale;
  if (clip_norm > 0 && r.norm > clip_norm) r.factor *= clip_norm / r.norm;
  // (x - x is 0 for every finite x and NaN for infinities and NaN: std::isfinite without <cmath>'s
  // host/device split.)
  if (!(r.norm - r.norm == 0.0)) r.factor = r.norm - r.norm;
  return r;
}

// Whether an update with this factor is applied (a non-finite norm gives a NaN factor).
DRAGOMAN_HOST_DEVICE inline bool factor_applies(double factor) { return factor - factor == 0.0; }

}  // namespace dragoman::common
