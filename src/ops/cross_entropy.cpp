// Cross-entropy (see cross_entropy.h).
#include "ops/cross_entropy.h"

#include "device/cuda/context.h"
#include "kernels/cross_entropy.h"
#include "ops/dispatch.h"

namespace dragoman::ops {

using detail::require;

namespace {

void check_targets(const char* op, const Tensor& logits, const Tensor& targets) {
  detail::require_like(op, "logits", logits, logits);
  require(logits.rank() == 2, op, "logits must be [N, V], got " + logits.describe());
  require(targets.dtype() == DType::kI32 && targets.device() == logits.device() && targets.is_contiguous() &&
              targets.shape() == Shape{logits.dim(0)},
          op,
          "targets must be a contiguous i32 [N] tensor on " + logits.device().str() + ", got " + targets.describe());
  // Ids on a GPU are not checked here: that would copy them back and wait for the device on every
  // batch. A batch reaches a GPU only through Batch::to, which validates its ids on the host first
  // (model/batch.h); the kernels turn an id outside [0, V) into a NaN loss, never a stray read.
  if (!targets.device().is_cpu()) return;
  const std::int32_t* t = targets.data<std::int32_t>();
  for (std::int64_t i = 0; i < targets.numel(); ++i) {
    require(t[i] >= 0 && t[i] < logits.dim(1), op, "target id " + std::to_string(t[i]) + " outside the vocabulary");
  }
}

}  // namespace

void log_softmax_(Tensor& x) {
  constexpr const char* kOp = "log_softmax_";
  detail::require_like(kOp, "x", x, x);
  const std::int64_t v = x.dim(-1);
  detail::on_device(
      kOp, x,
      [&] {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          cpu::log_softmax<T>(x.data<T>(), x.numel() / v, v);
        });
      },
      [&](auto stream) {
        detail::dispatch_cuda(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          cuda::log_softmax<T>(x.data<T>(), x.numel() / v, v, stream);
        });
      });
}

namespace {

// The loss and nll sums of logits [N, V] added into sums (f64 [2]); the logits become
// log-probabilities, or dlogits when `fused`.
// `scale` multiplies the dlogits (fused only).
void cross_entropy_into(const char* op, Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing,
                        Tensor& sums, bool fused, double scale) {
  check_targets(op, logits, targets);
  require(sums.dtype() == DType::kF64 && sums.device() == logits.device() && sums.shape() == Shape{2} &&
              sums.is_contiguous(),
          op, "sums must be a contiguous f64 [2] tensor on the logits' device, got " + sums.describe());
  detail::on_device(
      op, logits,
      [&] {
        detail::dispatch_storage(op, logits, [&](auto zero) {
          using T = decltype(zero);
          double* out = sums.data<double>();
          if (fused) {
            cpu::cross_entropy_fused<T>(logits.data<T>(), targets.data<std::int32_t>(), logits.dim(0), logits.dim(1),
                                        pad, smoothing, out, out + 1, scale);
          } else {
            cpu::cross_entropy_forward<T>(logits.data<T>(), targets.data<std::int32_t>(), logits.dim(0), logits.dim(1),
                                          pad, smoothing, out, out + 1);
          }
        });
      },
      [&](auto stream) {
        // Each row's {loss, nll}, added in a fixed order by the kernel (deterministic sums).
        Tensor row_losses = Tensor::empty({logits.dim(0), 2}, DType::kF64, logits.device());  // [N, 2]
        detail::dispatch_cuda(op, logits, [&](auto zero) {
          using T = decltype(zero);
          double* out = sums.data<double>();
          if (fused) {
            cuda::cross_entropy_fused<T>(logits.data<T>(), targets.data<std::int32_t>(), logits.dim(0), logits.dim(1),
                                         pad, smoothing, out, out + 1, row_losses.data<double>(), stream, scale);
          } else {
            cuda::cross_entropy_forward<T>(logits.data<T>(), targets.data<std::int32_t>(), logits.dim(0), logits.dim(1),
                                           pad, smoothing, out, out + 1, row_losses.data<double>(), stream);
          }
        });
      });
}

CrossEntropySums read_back(const Tensor& sums) {
  const std::vector<double> host = sums.to_vector<double>();
  return {host[0], host[1]};
}

}  // namespace

void cross_entropy_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing, Tensor& sums) {
  cross_entropy_into("cross_entropy_", logits, targets, pad, smoothing, sums, false, 1.0);
}

void cross_entropy_fused_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing, Tensor& sums,
                          double scale) {
  cross_entropy_into("cross_entropy_fused_", logits, targets, pad, smoothing, sums, true, scale);
}

CrossEntropySums cross_entropy_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing) {
  Tensor sums = Tensor::zeros({2}, DType::kF64, logits.device());
  cross_entropy_(logits, targets, pad, smoothing, sums);
  return read_back(sums);
}

CrossEntropySums cross_entropy_fused_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing,
                                      double scale) {
  Tensor sums = Tensor::zeros({2}, DType::kF64, logits.device());
  cross_entropy_fused_(logits, targets, pad, smoothing, sums, scale);
  return read_back(sums);
}

}  // namespace dragoman::ops
