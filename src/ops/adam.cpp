// Adam (see adam.h).
#include "ops/adam.h"

#include <type_traits>

#include "kernels/cuda/adam.h"
#include "ops/dispatch.h"

namespace dragoman::ops {

void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const cpu::AdamHyper& hyper) {
  adam_step(param, grad, m, v, hyper, nullptr);
}

void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const cpu::AdamHyper& hyper, Tensor* mirror) {
  constexpr const char* kOp = "adam_step";
  detail::require_like(kOp, "param", param, param);
  for (const Tensor* t : {&grad, static_cast<const Tensor*>(&m), static_cast<const Tensor*>(&v)}) {
    detail::require_like(kOp, "state", *t, param);
    detail::require(t->numel() == param.numel(), kOp, "sizes differ: " + t->describe() + " vs " + param.describe());
  }
  detail::require(hyper.step >= 1, kOp, "step must be >= 1");
  if (mirror != nullptr) {
    detail::require(mirror->defined() && (mirror->dtype() == DType::kBF16 || mirror->dtype() == DType::kF16), kOp,
                    "the mirror must be bf16 or f16, got " + mirror->describe());
    detail::require_accumulator(kOp, "param (the master of a mirror)", param, *mirror);
    detail::require(mirror->device() == param.device() && mirror->is_contiguous() && mirror->numel() == param.numel(),
                    kOp, "the mirror " + mirror->describe() + " does not match param " + param.describe());
  }
  switch (param.device().type) {
    case DeviceType::kCpu:
      if (mirror == nullptr) {
        detail::dispatch_float(kOp, param, [&](auto zero) {
          using T = decltype(zero);
          cpu::adam_step<T>(param.data<T>(), grad.data<T>(), m.data<T>(), v.data<T>(), param.numel(), hyper);
        });
      } else {
        detail::dispatch_storage(kOp, *mirror, [&](auto zero) {
          using M = decltype(zero);
          if constexpr (std::is_same_v<M, bf16> || std::is_same_v<M, f16>) {
            cpu::adam_step<M>(param.data<float>(), grad.data<float>(), m.data<float>(), v.data<float>(), param.numel(),
                              hyper, mirror->data<M>());
          }
        });
      }
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(param);
      if (mirror == nullptr) {
        detail::dispatch_float(kOp, param, [&](auto zero) {
          using T = decltype(zero);
          cuda::adam_step<T>(param.data<T>(), grad.data<T>(), m.data<T>(), v.data<T>(), param.numel(), hyper,
                             on_device.stream);
        });
      } else if (mirror->dtype() == DType::kBF16) {
        cuda::adam_step<bf16>(param.data<float>(), grad.data<float>(), m.data<float>(), v.data<float>(), param.numel(),
                              hyper, mirror->data<bf16>(), on_device.stream);
      } else {
        cuda::adam_step<f16>(param.data<float>(), grad.data<float>(), m.data<float>(), v.data<float>(), param.numel(),
                             hyper, mirror->data<f16>(), on_device.stream);
      }
      break;
    }
  }
}

}  // namespace dragoman::ops
