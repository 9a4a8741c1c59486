// Adam (see adam.h).
#include "ops/adam.h"

#include "ops/dispatch.h"

namespace dragoman::ops {

void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const cpu::AdamHyper& hyper) {
  constexpr const char* kOp = "adam_step";
  detail::require_like(kOp, "param", param, param);
  for (const Tensor* t : {&grad, static_cast<const Tensor*>(&m), static_cast<const Tensor*>(&v)}) {
    detail::require_like(kOp, "state", *t, param);
    detail::require(t->numel() == param.numel(), kOp, "sizes differ: " + t->describe() + " vs " + param.describe());
  }
  detail::require(hyper.step >= 1, kOp, "step must be >= 1");
  switch (param.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_float(kOp, param, [&](auto zero) {
        using T = decltype(zero);
        cpu::adam_step<T>(param.data<T>(), grad.data<T>(), m.data<T>(), v.data<T>(), param.numel(), hyper);
      });
      break;
    case DeviceType::kCuda: detail::no_cuda_kernel(kOp);
  }
}

}  // namespace dragoman::ops
