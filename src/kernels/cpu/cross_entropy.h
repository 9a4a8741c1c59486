// log-softmax and the label-smoothed cross-entropy, the CPU spec (docs/MODEL.md, "Loss").
// For a row with target y != pad, eps = smoothing, V classes:
//   q(k) = (1 - eps) [k = y] + eps / (V - 1) [k != pad];  loss = -sum_k q(k) log p(k);  nll = -log p(y)
// Rows whose target is pad are ignored (no loss, zero gradient). Sums are accumulated in double,
// row by row in order, so they do not depend on the thread count.
// Precision (base/numeric.h): T is double, float, bf16 or f16. A row's maximum, log-sum-exp and each
// log-probability are computed in acc_t<T> (float for float, bf16, f16); each element written back
// (log-probability or gradient) is rounded once with store<T>(); the loss sums add the acc_t<T>
// log-probabilities (not their rounded copies) in double. (Until #12, float rows computed in double.)
// f32 rows (one exp a logit): e(k) = exp(x(k) - max) by vector_math.h's exp, stored with
// its sum Z, log_z = max + log(Z), p(k) = e(k) / Z; the loss's sum of log-probabilities is the sum
// of the logits (16 double lanes, sum_wide_f32) less log_z for each, in double.
#pragma once

#include <cstdint>

namespace dragoman::cpu {

// x[r, :] = log_softmax(x[r, :]) in place.   x: [rows, V]
template <typename T>
void log_softmax(T* x, std::int64_t rows, std::int64_t v);

// Replaces logits by log-probabilities (in place) and adds the loss and nll sums over non-pad rows
// to *loss_sum and *nll_sum.   logits: [rows, V]; targets: [rows]
template <typename T>
void cross_entropy_forward(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad,
                           double smoothing, double* loss_sum, double* nll_sum);

// The training loss, fused with its gradient: adds the sums as cross_entropy_forward does and
// replaces logits by scale * d(loss_sum)/d(logits) = scale (p - q) (in place; 0 for pad rows), so
// the backward pass has nothing left to compute: `scale` is the factor backward would apply (the
// loss scale over the update's target tokens). p = exp(log-probability in acc_t<T>) (f32: e / Z,
// above), never of a rounded copy; (p - q) * acc_t<T>(scale) is rounded once to T (for f32 and f64
// the bits of scaling p - q afterwards). Both kernels compute the sums the same way, so they give
// the same bits.
template <typename T>
void cross_entropy_fused(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad,
                         double smoothing, double* loss_sum, double* nll_sum, double scale = 1.0);

}  // namespace dragoman::cpu
