// Cross-entropy (see cross_entropy.h).
#include "ops/cross_entropy.h"

#include "kernels/cpu/cross_entropy.h"
#include "ops/dispatch.h"

namespace dragoman::ops {

using detail::require;

namespace {

void check_targets(const char* op, const Tensor& logits, const Tensor& targets) {
  detail::require_like(op, "logits", logits, logits);
  require(logits.rank() == 2, op, "logits must be [N, V], got " + logits.describe());
  require(targets.dtype() == DType::kI32 && targets.device().is_cpu() && targets.is_contiguous() &&
              targets.shape() == Shape{logits.dim(0)},
          op, "targets must be a contiguous i32 [N] CPU tensor, got " + targets.describe());
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
  switch (x.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cpu::log_softmax<T>(x.data<T>(), x.numel() / v, v);
      });
      break;
    case DeviceType::kCuda: detail::no_cuda_kernel(kOp);
  }
}

CrossEntropySums cross_entropy_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing) {
  constexpr const char* kOp = "cross_entropy_";
  check_targets(kOp, logits, targets);
  CrossEntropySums sums;
  switch (logits.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, logits, [&](auto zero) {
        using T = decltype(zero);
        cpu::cross_entropy_forward<T>(logits.data<T>(), targets.data<std::int32_t>(), logits.dim(0), logits.dim(1), pad,
                                      smoothing, &sums.loss, &sums.nll);
      });
      break;
    case DeviceType::kCuda: detail::no_cuda_kernel(kOp);
  }
  return sums;
}

CrossEntropySums cross_entropy_fused_(Tensor& logits, const Tensor& targets, std::int32_t pad, double smoothing) {
  constexpr const char* kOp = "cross_entropy_fused_";
  check_targets(kOp, logits, targets);
  CrossEntropySums sums;
  switch (logits.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, logits, [&](auto zero) {
        using T = decltype(zero);
        cpu::cross_entropy_fused<T>(logits.data<T>(), targets.data<std::int32_t>(), logits.dim(0), logits.dim(1), pad,
                                    smoothing, &sums.loss, &sums.nll);
      });
      break;
    case DeviceType::kCuda: detail::no_cuda_kernel(kOp);
  }
  return sums;
}

}  // namespace dragoman::ops
