// Layer normalisation (see layer_norm.h).
#include "ops/layer_norm.h"

#include <cstdint>
#include <string>

#include "kernels/layer_norm.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"

namespace dragoman::ops {

namespace {

// x: [..., D] and its weight and bias [D] of x's dtype and device; returns D.
std::int64_t check_forward_operands(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  detail::require_like(op, "x", x, x);
  const std::int64_t d = x.dim(-1);
  detail::require_like(op, "weight", weight, x);
  detail::require_like(op, "bias", bias, x);
  detail::require_shape(op, "weight", weight, {d});
  detail::require_shape(op, "bias", bias, {d});
  return d;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, LayerNormSaved* saved) {
  constexpr const char* kOp = "layer_norm";
  const std::int64_t d = check_forward_operands(kOp, x, weight, bias), rows = x.numel() / d;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  const DType stats = accumulator_dtype(x.dtype());
  Tensor mean = Tensor::empty({rows}, stats, x.device());  // [rows]
  Tensor rstd = Tensor::empty({rows}, stats, x.device());  // [rows]
  detail::on_device(
      kOp, x,
      [&] {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          using A = acc_t<T>;
          cpu::layer_norm_forward<T>(x.data<T>(), weight.data<T>(), bias.data<T>(), y.data<T>(), mean.data<A>(),
                                     rstd.data<A>(), rows, d, eps);
        });
      },
      [&](auto stream) {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          using A = acc_t<T>;
          cuda::layer_norm_forward<T>(x.data<T>(), weight.data<T>(), bias.data<T>(), y.data<T>(), mean.data<A>(),
                                      rstd.data<A>(), rows, d, eps, stream);
        });
      });
  if (saved != nullptr) *saved = {mean, rstd};
  return y;
}

Tensor add_layer_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, const Tensor& bias, double eps) {
  constexpr const char* kOp = "add_layer_norm";
  const std::int64_t d = check_forward_operands(kOp, x, weight, bias), rows = x.numel() / d;
  detail::require_like(kOp, "residual", residual, x);
  detail::require_shape(kOp, "residual", residual, x.shape());
  // On a GPU: the sum, then the layer norm (two launches; the CPU fuses them into one row pass).
  if (!x.device().is_cpu()) return layer_norm(add(x, residual), weight, bias, eps, nullptr);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  detail::dispatch_storage(kOp, x, [&](auto zero) {
    using T = decltype(zero);
    cpu::add_layer_norm_forward<T>(x.data<T>(), residual.data<T>(), weight.data<T>(), bias.data<T>(), y.data<T>(), rows,
                                   d, eps);
  });
  return y;
}

namespace {

// layer_norm_backward, and with p > 0 dropout(dx) into *dropped (one pass on the GPU's register path).
Tensor backward(const char* kOp, const Tensor& dy, const Tensor& x, const Tensor& weight, const LayerNormSaved& saved,
                Tensor& dweight, Tensor& dbias, double p, std::uint64_t seed, std::uint64_t rng_stream,
                Tensor* dropped) {
  detail::require(p >= 0 && p < 1, kOp, "dropout probability must be in [0, 1), got " + std::to_string(p));
  detail::require_like(kOp, "x", x, x);
  detail::require_like(kOp, "dy", dy, x);
  detail::require_shape(kOp, "dy", dy, x.shape());
  const std::int64_t d = x.dim(-1), rows = x.numel() / d;
  // weight is an activation-class operand (x's dtype); the statistics and the parameter gradients
  // are of x's accumulator dtype.
  detail::require_like(kOp, "weight", weight, x);
  detail::require_shape(kOp, "weight", weight, {d});
  const auto require_acc_operand = [&](const char* what, const Tensor& t, const Shape& shape) {
    detail::require_accumulator(kOp, what, t, x);
    detail::require_shape(kOp, what, t, shape);
  };
  require_acc_operand("dweight", dweight, {d});
  require_acc_operand("dbias", dbias, {d});
  require_acc_operand("saved mean", saved.mean, {rows});
  require_acc_operand("saved rstd", saved.rstd, {rows});
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  const bool drop = dropped != nullptr && p > 0;
  detail::on_device(
      kOp, x,
      [&] {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          using A = acc_t<T>;
          cpu::layer_norm_backward<T>(dy.data<T>(), x.data<T>(), weight.data<T>(), saved.mean.data<A>(),
                                      saved.rstd.data<A>(), dx.data<T>(), dweight.data<A>(), dbias.data<A>(), rows, d);
        });
        if (drop) *dropped = dropout(dx, p, seed, rng_stream);
      },
      [&](auto stream) {
        if (drop) *dropped = Tensor::empty(x.shape(), x.dtype(), x.device());
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          using A = acc_t<T>;
          // [2, chunks, D] column-sum partials of dweight and dbias (kernels/layer_norm.h)
          Tensor workspace =
              Tensor::empty({cuda::layer_norm_backward_workspace(rows, d)}, accumulator_dtype(x.dtype()), x.device());
          cuda::DxDropout<T> dx_dropout;
          if (drop) dx_dropout = {dropped->data<T>(), p, seed, rng_stream};
          cuda::layer_norm_backward<T>(dy.data<T>(), x.data<T>(), weight.data<T>(), saved.mean.data<A>(),
                                       saved.rstd.data<A>(), dx.data<T>(), dweight.data<A>(), dbias.data<A>(), rows, d,
                                       workspace.data<A>(), stream, dx_dropout);
        });
      });
  if (dropped != nullptr && !drop) *dropped = dx;  // p == 0: the identity, as ops::dropout
  return dx;
}

}  // namespace

Tensor layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const LayerNormSaved& saved,
                           Tensor& dweight, Tensor& dbias) {
  return backward("layer_norm_backward", dy, x, weight, saved, dweight, dbias, 0, 0, 0, nullptr);
}

LayerNormDropoutGrads layer_norm_backward_dropout(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                  const LayerNormSaved& saved, Tensor& dweight, Tensor& dbias, double p,
                                                  std::uint64_t seed, std::uint64_t rng_stream) {
  LayerNormDropoutGrads g;
  g.dx = backward("layer_norm_backward_dropout", dy, x, weight, saved, dweight, dbias, p, seed, rng_stream, &g.dropped);
  return g;
}

}  // namespace dragoman::ops
