// log-softmax and label-smoothed cross-entropy on CUDA (see cross_entropy.h): one block per row,
// three passes over the row (maximum, sum of exponentials, write), block reductions with
// cub::BlockReduce (a fixed tree for a fixed block size), then one block adding the row losses.
#include "kernels/cross_entropy.h"

#include <cub/block/block_reduce.cuh>

#include "base/numeric.h"
#include "device/cuda/check.h"

namespace dragoman::cuda {
namespace {

constexpr int kRowThreads = 512;  // a 32000-wide row: about 63 elements per thread

enum class Mode { kLogSoftmax, kForward, kFused };

// std::max's choice (a < b ? b : a), as the CPU's log_sum_exp makes it.
struct MaxOp {
  template <typename A>
  __device__ A operator()(const A& a, const A& b) const {
    return a < b ? b : a;
  }
};

template <typename T, Mode kMode>
__global__ void __launch_bounds__(kRowThreads)
    row_kernel(T* x, const std::int32_t* targets, std::int64_t v, std::int32_t pad, double smoothing, double off,
               double* row_losses, double scale) {
  using Acc = acc_t<T>;
  using ReduceAcc = cub::BlockReduce<Acc, kRowThreads>;
  using ReduceDouble = cub::BlockReduce<double, kRowThreads>;
  __shared__ union {
    typename ReduceAcc::TempStorage acc;
    typename ReduceDouble::TempStorage d;
  } temp;
  __shared__ Acc broadcast;

  const std::int64_t r = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x);
  T* row = x + r * v;
  const std::int32_t y = kMode == Mode::kLogSoftmax ? -1 : targets[r];
  const bool y_valid = y >= 0 && y < v;
  if (kMode == Mode::kFused && y == pad) {
    for (std::int64_t k = tid; k < v; k += kRowThreads) row[k] = store<T>(0);
    if (tid == 0) row_losses[2 * r] = row_losses[2 * r + 1] = 0;
    return;
  }
  // The target's logit, read before any thread of the block overwrites the row (the writes come
  // after the barriers of the reductions below, which thread 0 reaches only after this read).
  Acc logit_y = 0;
  if (kMode != Mode::kLogSoftmax && tid == 0 && y_valid) logit_y = load(row[y]);

  Acc max_value = load(row[0]);
  for (std::int64_t k = tid; k < v; k += kRowThreads) max_value = MaxOp()(max_value, load(row[k]));
  max_value = ReduceAcc(temp.acc).Reduce(max_value, MaxOp());
  if (tid == 0) broadcast = max_value;
  __syncthreads();
  max_value = broadcast;

  Acc sum = 0;
  for (std::int64_t k = tid; k < v; k += kRowThreads) sum += expf(load(row[k]) - max_value);
  sum = ReduceAcc(temp.acc).Sum(sum);  // temp reused: the barrier above separates the two uses
  if (tid == 0) broadcast = max_value + logf(sum);
  __syncthreads();
  const Acc log_z = broadcast;

  double sum_lp = 0;  // over k != pad
  for (std::int64_t k = tid; k < v; k += kRowThreads) {
    const Acc lp = load(row[k]) - log_z;
    if constexpr (kMode == Mode::kFused) {
      const auto q = static_cast<Acc>((k == y ? 1.0 - smoothing : 0.0) + (k != pad ? off : 0.0));
      row[k] = store<T>((expf(lp) - q) * static_cast<Acc>(scale));
    } else {
      row[k] = store<T>(lp);
    }
    if (k != pad) sum_lp += lp;
  }
  if constexpr (kMode != Mode::kLogSoftmax) {
    __syncthreads();  // temp's last reader (the Sum above) is done before it is reused
    sum_lp = ReduceDouble(temp.d).Sum(sum_lp);
    if (tid == 0) {
      double* out = row_losses + 2 * r;
      if (y == pad) {
        out[0] = out[1] = 0;
      } else {
        // An id outside the vocabulary (never on a validated batch) gives NaN, not a stray read.
        const double lp_y = y_valid ? static_cast<double>(logit_y - log_z) : nan("");
        out[0] = -(1.0 - smoothing) * lp_y - off * sum_lp;
        out[1] = -lp_y;
      }
    }
  }
}

constexpr int kSumThreads = 512;

// *loss_sum += sum of row_losses[r, 0], *nll_sum += sum of row_losses[r, 1]: thread i adds rows
// i, i + 512, ... in order, then a fixed tree adds the threads.
__global__ void __launch_bounds__(kSumThreads)
    sum_rows_kernel(const double* row_losses, std::int64_t rows, double* loss_sum, double* nll_sum) {
  using Reduce = cub::BlockReduce<double, kSumThreads>;
  __shared__ typename Reduce::TempStorage temp;
  double loss = 0, nll = 0;
  for (std::int64_t r = threadIdx.x; r < rows; r += kSumThreads) {
    loss += row_losses[2 * r];
    nll += row_losses[2 * r + 1];
  }
  loss = Reduce(temp).Sum(loss);
  __syncthreads();
  nll = Reduce(temp).Sum(nll);
  if (threadIdx.x == 0) {
    *loss_sum += loss;
    *nll_sum += nll;
  }
}

template <typename T, Mode kMode>
void launch(T* x, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad, double smoothing,
            double* loss_sum, double* nll_sum, double* row_losses, Stream stream, double scale = 1.0) {
  if (rows == 0 || v == 0) return;
  const double off = v > 1 ? smoothing / static_cast<double>(v - 1) : 0.0;
  row_kernel<T, kMode>
      <<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(x, targets, v, pad, smoothing, off, row_losses, scale);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  if constexpr (kMode != Mode::kLogSoftmax) {
    sum_rows_kernel<<<1, kSumThreads, 0, stream>>>(row_losses, rows, loss_sum, nll_sum);
    DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

template <typename T>
void log_softmax(T* x, std::int64_t rows, std::int64_t v, Stream stream) {
  launch<T, Mode::kLogSoftmax>(x, nullptr, rows, v, 0, 0.0, nullptr, nullptr, nullptr, stream);
}

template <typename T>
void cross_entropy_forward(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad,
                           double smoothing, double* loss_sum, double* nll_sum, double* row_losses, Stream stream) {
  launch<T, Mode::kForward>(logits, targets, rows, v, pad, smoothing, loss_sum, nll_sum, row_losses, stream);
}

template <typename T>
void cross_entropy_fused(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad,
                         double smoothing, double* loss_sum, double* nll_sum, double* row_losses, Stream stream,
                         double scale) {
  launch<T, Mode::kFused>(logits, targets, rows, v, pad, smoothing, loss_sum, nll_sum, row_losses, stream, scale);
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                     \
  template void log_softmax<T>(T*, std::int64_t, std::int64_t, Stream);                                             \
  template void cross_entropy_forward<T>(T*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t, double, \
                                         double*, double*, double*, Stream);                                        \
  template void cross_entropy_fused<T>(T*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t, double,   \
                                       double*, double*, double*, Stream, double);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cuda
