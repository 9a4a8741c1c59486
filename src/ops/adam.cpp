// Adam (see adam.h).
#include "ops/adam.h"

#include <type_traits>

#include "kernels/adam.h"
#include "ops/dispatch.h"

namespace dragoman::ops {

void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const cpu::AdamHyper& hyper) {
  adam_step(param, grad, m, v, hyper, nullptr);
}

void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const cpu::AdamHyper& hyper, Tensor* mirror,
               const Tensor* grad_factor) {
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
  if (grad_factor != nullptr) {
    detail::require(
        grad_factor->dtype() == DType::kF64 && grad_factor->numel() == 2 && grad_factor->is_contiguous() &&
            grad_factor->device() == param.device(),
        kOp, "grad_factor must be ops::grad_norm_factor's f64 [2] on param's device, got " + grad_factor->describe());
  }
  detail::on_device(
      kOp, param,
      [&] {
        const double factor = grad_factor != nullptr ? grad_factor->data<double>()[1] : 1.0;
        if (mirror == nullptr) {
          detail::dispatch_float(kOp, param, [&](auto zero) {
            using T = decltype(zero);
            cpu::adam_step<T>(param.data<T>(), grad.data<T>(), m.data<T>(), v.data<T>(), param.numel(), hyper, factor);
          });
        } else {
          detail::dispatch_storage(kOp, *mirror, [&](auto zero) {
            using M = decltype(zero);
            if constexpr (std::is_same_v<M, bf16> || std::is_same_v<M, f16>) {
              cpu::adam_step<M>(param.data<float>(), grad.data<float>(), m.data<float>(), v.data<float>(),
                                param.numel(), hyper, mirror->data<M>(), factor);
            }
          });
        }
      },
      [&](auto stream) {
        const double* factor = grad_factor != nullptr ? grad_factor->data<double>() + 1 : nullptr;
        if (mirror == nullptr) {
          detail::dispatch_float(kOp, param, [&](auto zero) {
            using T = decltype(zero);
            cuda::adam_step<T>(param.data<T>(), grad.data<T>(), m.data<T>(), v.data<T>(), param.numel(), hyper, factor,
                               stream);
          });
        } else if (mirror->dtype() == DType::kBF16) {
          cuda::adam_step<bf16>(param.data<float>(), grad.data<float>(), m.data<float>(), v.data<float>(),
                                param.numel(), hyper, mirror->data<bf16>(), factor, stream);
        } else {
          cuda::adam_step<f16>(param.data<float>(), grad.data<float>(), m.data<float>(), v.data<float>(), param.numel(),
                               hyper, mirror->data<f16>(), factor, stream);
        }
      });
}

}  // namespace dragoman::ops
