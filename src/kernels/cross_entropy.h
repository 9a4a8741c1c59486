// log-softmax and the label-smoothed cross-entropy, the CPU spec (docs/MODEL.md, "Loss").
// For a row with target y != pad, eps = smoothing, V classes:
//   q(k) = (1 - eps) [k = y] + eps / (V - 1) [k != pad];  loss = -sum_k q(k) log p(k);  nll = -log p(y)
// Rows whose target is pad are ignored (no loss, zero gradient). Sums are accumulated in double,
// row by row in order, so they do not depend on the thread count.
// Precision (base/numeric.h): T is double, float, bf16 or f16. A row's maximum, log-sum-exp and each
// log-probability are computed in acc_t<T> (float for float, bf16, f16); each element written back
// (log-probability or gradient) is rounded once with store<T>(); the loss sums add the acc_t<T>
// log-probabilities (not their rounded copies) in double.
// f32 rows (one exp a logit): e(k) = exp(x(k) - max) by vector_math.h's exp, stored with
// its sum Z, log_z = max + log(Z), p(k) = e(k) / Z; the loss's sum of log-probabilities is the sum
// of the logits (16 double lanes, sum_wide_f32) less log_z for each, in double.
//
// CUDA (namespace cuda):
// log-softmax and the label-smoothed cross-entropy on CUDA, the twins of the CPU spec above
// (same names and arguments, plus a device scratch buffer and a stream), with the same formulas and
// rounding points: a row's maximum, log-sum-exp and each log-probability in acc_t<T>, each stored
// element rounded once with store<T>(), the loss of a row summed in double from the acc_t<T>
// log-probabilities.
//
// One thread block per row; its reductions (maximum, sum of exponentials, sum of log-probabilities)
// run in a fixed tree order, so results repeat bit for bit, but the order is not the CPU's serial one:
// a row's log-sum-exp may differ from the CPU's in its last bits (more for wide rows: the CPU adds V
// exponentials one by one in float), and every log-probability of the row with it.
//
// Sums: each row's {loss, nll} is written to row_losses, then one block adds them in a fixed order in
// double and adds the totals to *loss_sum and *nll_sum (device memory, e.g. an f64 [2] tensor that
// sums a whole log window). No atomics, so the sums do not depend on timing.
//
// All pointers are device memory of the stream's device (the caller holds its DeviceGuard);
// asynchronous on `stream`, errors checked at launch. T is float, bf16 or f16 (no f64 on CUDA). Targets must be
// in [0, V) (a batch on a GPU was validated on the host, model/batch.h); an id outside gives a NaN
// loss rather than an out-of-bounds read.
#pragma once

#include <cstdint>

#include "device/cuda/stream.h"

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

namespace dragoman::cuda {

// x[r, :] = log_softmax(x[r, :]) in place.   x: [rows, V]
template <typename T>
void log_softmax(T* x, std::int64_t rows, std::int64_t v, Stream stream);

// Logits become log-probabilities (in place); the loss and nll sums over rows whose target is not
// pad are added to *loss_sum and *nll_sum.   logits: [rows, V]; targets: i32 [rows];
// row_losses: scratch [rows, 2]
template <typename T>
void cross_entropy_forward(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad,
                           double smoothing, double* loss_sum, double* nll_sum, double* row_losses, Stream stream);

// The same sums; logits become scale * d(loss_sum)/d(logits) = (p - q) * acc_t<T>(scale), rounded
// once (in place; 0 for pad rows).
template <typename T>
void cross_entropy_fused(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad,
                         double smoothing, double* loss_sum, double* nll_sum, double* row_losses, Stream stream,
                         double scale = 1.0);

}  // namespace dragoman::cuda
