// log-softmax and the label-smoothed cross-entropy on CUDA, the twins of kernels/cpu/cross_entropy.h
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
// loss rather than an out-of-bounds read. Plain C++ header; the CPU-only build links stubs.
#pragma once

#include <cstdint>

#include "device/cuda/stream.h"

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
