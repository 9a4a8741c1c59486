// log-softmax and the label-smoothed cross-entropy on tensors (kernels/cross_entropy.h; on CUDA
// kernels/cross_entropy.h, whose sums are deterministic but whose per-row reductions add in
// another order than the CPU's).
// Logits, log-probabilities and dlogits are activations (f64, f32, bf16 or f16), rewritten in place;
// the sums are double.
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

// Replaces logits [N, V] by their log-probabilities (in place) and returns the loss and nll sums
// over rows whose target (i32 [N], on the logits' device) is not pad. (Evaluation.) Target ids are
// range-checked on the CPU; on a GPU they were checked when their batch was copied (Batch::to).
CrossEntropySums cross_entropy_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing);

// The same sums, with logits replaced by scale * d(loss_sum)/d(logits) = scale (p - q) (in place;
// pad rows 0): the training loss fused with its gradient, so one [N, V] buffer goes from logits to
// dlogits in one pass, already scaled as backward needs them (the loss scale over the update's
// target tokens), and backward reads them as they are. (Training.)
CrossEntropySums cross_entropy_fused_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing,
                                      double scale = 1.0);

// The device forms of both: the loss and nll sums are added into `sums` (f64 [2] = {loss, nll} on
// the logits' device) and not read back, so a trainer sums a whole log window where the logits are
// and reads it once (model/batch.h). The forms above read one call's sums back.
void cross_entropy_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing, Tensor& sums);
void cross_entropy_fused_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing, Tensor& sums,
                          double scale = 1.0);

}  // namespace dragoman::ops
