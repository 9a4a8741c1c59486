// Layer normalisation over the last dimension D, the CPU spec. T is the storage type of x, weight,
// bias, y, dy and dx: double, float, bf16 or f16; A = acc_t<T> (double for double, float otherwise)
// is the type of everything else (base/numeric.h):
//   mean = sum(x) / D, var = sum((x - mean)^2) / D (biased), rstd = 1 / sqrt(var + eps)
//   y = (x - mean) * rstd * weight + bias
// Forward: the row sums, mean and rstd are computed in A (sums in index order; f32's in the 16 lanes
// of kernels/cpu/vector_math.h, the same bits at every instruction-set level); mean and rstd are
// stored in A (statistics, no rounding to T); each y element is computed in A and rounded once.
// Backward: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight, the row sums
// in A (f32's in lanes, as the forward's), each dx element rounded once; dweight and dbias (parameter gradients, A)
// accumulate (+=) column sums in row order, so the result does not depend on the thread count.
//
// CUDA (namespace cuda):
// Layer normalisation on CUDA, the twin of the CPU spec above: same arguments plus a stream
// (and the backward's workspace). T = double, float, bf16 or f16; statistics and parameter
// gradients in acc_t<T>. The per-element formulas are the CPU spec's (kernels/common/layer_norm.h); the
// sums are not in its order:
//   row sums (mean, variance; the backward's mean(g) and mean(g * xhat)): one warp per row, lane l
//     sums elements l, l + 32, ... in order, then a butterfly over the 32 lanes; rows of whole
//     16-byte packs of at most 1,024 bf16/f16, 512 float or 256 double elements, 16-byte aligned,
//     are read once into registers a pack at a time (lane l: packs l, l + 32, ...), summed in that
//     order, then the butterfly (the training model's rows: one read of x, of dy). Deterministic; the
//     statistics are within float summation error of the CPU's sequential sums, so outputs can
//     differ from the CPU's by a few float ulps before their rounding to T (for bf16/f16: the
//     stored element is the CPU's or the next one).
//   column sums (dweight, dbias): two passes over chunks of kColumnSumChunkRows rows (see
//     bias_backward in elementwise.h): the CPU's order and bits up to kColumnSumChunkRows rows,
//     reassociated (fixed order) beyond.
// All pointers are device memory of the stream's device (the caller holds its DeviceGuard).
#pragma once

#include <cstdint>

#include "base/numeric.h"
#include "device/cuda/stream.h"
#include "kernels/elementwise.h"

namespace dragoman::cpu {

// x, y: [rows, D]; weight, bias: [D]; mean, rstd: [rows] (saved for the backward pass).
template <typename T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, acc_t<T>* mean, acc_t<T>* rstd,
                        std::int64_t rows, std::int64_t d, double eps);

// y = layer norm of (x + residual), the sum rounded to T as cpu::add rounds it: the same bits as
// cpu::add then layer_norm_forward, in one pass over each row and without the statistics
// (decoding's post-norm residual blocks).   x, residual, y: [rows, D]
template <typename T>
void add_layer_norm_forward(const T* x, const T* residual, const T* weight, const T* bias, T* y, std::int64_t rows,
                            std::int64_t d, double eps);

// dy, x, dx: [rows, D]; weight: [D]; mean, rstd: [rows]; dweight, dbias: [D] (+=).
template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* weight, const acc_t<T>* mean, const acc_t<T>* rstd, T* dx,
                         acc_t<T>* dweight, acc_t<T>* dbias, std::int64_t rows, std::int64_t d);

}  // namespace dragoman::cpu

namespace dragoman::cuda {

// x, y: [rows, D]; weight, bias: [D]; mean, rstd: [rows] (saved for the backward pass).
template <typename T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, acc_t<T>* mean, acc_t<T>* rstd,
                        std::int64_t rows, std::int64_t d, double eps, Stream stream);

// The acc_t<T> elements of layer_norm_backward's workspace: two column-sum partials [chunks, D].
inline std::int64_t layer_norm_backward_workspace(std::int64_t rows, std::int64_t d) {
  return 2 * column_sum_chunks(rows) * d;
}

// The dropout of dx that a post-norm residual block's backward applies next (the gradient of the
// sublayer's output): dropped = dropout(dx, p, seed, rng_stream) as cuda::dropout gives it, bit for
// bit. On the register path it is written from the dx values in registers (no second read of dx,
// no launch of its own); elsewhere cuda::dropout runs after the dx kernel.
template <typename T>
struct DxDropout {
  T* dropped = nullptr;  // [rows, D] (not dx); null: no dropout
  double p = 0;          // 0 < p < 1
  std::uint64_t seed = 0, rng_stream = 0;
};

// dy, x, dx: [rows, D]; weight: [D]; mean, rstd: [rows]; dweight, dbias: [D] (+=);
// workspace: [layer_norm_backward_workspace(rows, D)] of acc_t<T>.
template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* weight, const acc_t<T>* mean, const acc_t<T>* rstd, T* dx,
                         acc_t<T>* dweight, acc_t<T>* dbias, std::int64_t rows, std::int64_t d, acc_t<T>* workspace,
                         Stream stream, const DxDropout<T>& dropout = {});

}  // namespace dragoman::cuda
