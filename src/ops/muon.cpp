// Muon (see muon.h).
#include "ops/muon.h"

#include "ops/dispatch.h"

namespace dragoman::ops {

void muon_step(std::vector<MuonTensors>& matrices, const cpu::MuonHyper& hyper) {
  constexpr const char* kOp = "muon_step";
  detail::require(hyper.ns_steps >= 0, kOp, "ns_steps must be >= 0");
  if (matrices.empty()) return;
  const Tensor& first = matrices.front().param;
  for (MuonTensors& x : matrices) {
    detail::require_like(kOp, "param", x.param, first);
    detail::require(x.param.rank() == 2, kOp, "param must be a matrix, got " + x.param.describe());
    for (const Tensor* t : {&x.grad, &x.momentum}) {
      detail::require_like(kOp, "state", *t, x.param);
      detail::require(t->shape() == x.param.shape(), kOp,
                      "shapes differ: " + t->describe() + " vs " + x.param.describe());
    }
  }
  detail::on_device(
      kOp, first,
      [&] {
        detail::dispatch_float(kOp, first, [&](auto zero) {
          using T = decltype(zero);
          std::vector<cpu::MuonMatrix<T>> kernels;
          for (MuonTensors& x : matrices) {
            kernels.push_back(
                {x.param.data<T>(), x.grad.data<T>(), x.momentum.data<T>(), x.param.dim(0), x.param.dim(1)});
          }
          cpu::muon_steps(kernels, hyper);
        });
      },
      [&](auto) {
        throw Error(std::string(kOp) + ": not built for CUDA yet (train with training.optimizer adam on a GPU)");
      });
}

}  // namespace dragoman::ops
