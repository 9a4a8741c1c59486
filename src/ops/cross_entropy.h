// log-softmax and the label-smoothed cross-entropy on tensors (kernels/cpu/cross_entropy.h).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace dragoman::ops {

struct CrossEntropySums {
  double loss = 0;  // label-smoothed
  double nll = 0;   // -log p(target)
};

// In place: x[r, :] = log_softmax(x[r, :]).   x: [..., V]
void log_softmax_(Tensor& x);

// Replaces logits [N, V] by their log-probabilities (in place, for the backward pass) and returns the
// loss and nll sums over rows whose target (i32 [N], CPU) is not pad.
CrossEntropySums cross_entropy_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing);

// Replaces the log-probabilities by grad_scale * d(loss_sum)/d(logits) (in place).
void cross_entropy_backward_(Tensor& log_probs, const Tensor& targets, std::int32_t pad, double smoothing,
                             double grad_scale);

}  // namespace dragoman::ops
