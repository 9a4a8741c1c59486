// Muon (see muon.h).
#include "ops/muon.h"

#include "ops/dispatch.h"

namespace dragoman::ops {

void muon_step(Tensor& param, const Tensor& grad, Tensor& momentum, const cpu::MuonHyper& hyper) {
  constexpr const char* kOp = "muon_step";
  detail::require_like(kOp, "param", param, param);
  detail::require(param.rank() == 2, kOp, "param must be a matrix, got " + param.describe());
  for (const Tensor* t : {&grad, static_cast<const Tensor*>(&momentum)}) {
    detail::require_like(kOp, "state", *t, param);
    detail::require(t->shape() == param.shape(), kOp, "shapes differ: " + t->describe() + " vs " + param.describe());
  }
  detail::require(hyper.ns_steps >= 0, kOp, "ns_steps must be >= 0");
  switch (param.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_float(kOp, param, [&](auto zero) {
        using T = decltype(zero);
        cpu::muon_step<T>(param.data<T>(), grad.data<T>(), momentum.data<T>(), param.dim(0), param.dim(1), hyper);
      });
      break;
    case DeviceType::kCuda:
      throw Error(std::string(kOp) + ": not built for CUDA yet (train with training.optimizer adam on a GPU)");
  }
}

}  // namespace dragoman::ops
