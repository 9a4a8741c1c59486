// Linear layers (see linear.h): oneDNN or OpenBLAS on the CPU, cuBLASLt on CUDA (kernels/gemm.h).
#include "ops/linear.h"

#include <algorithm>
#include <string>

#include "device/cuda/context.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/cpu/quantize.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "ops/dispatch.h"

namespace dragoman::ops {

void set_row_invariant_products(bool on) { cpu::set_row_invariant_products(on); }

using detail::require;

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  constexpr const char* kOp = "matmul";
  require(a.rank() == 2 && b.rank() == 2, kOp, "expected 2-D operands, got " + a.describe() + " and " + b.describe());
  detail::require_like(kOp, "b", b, a);
  detail::require_like(kOp, "a", a, a);
  const std::int64_t m = trans_a ? a.dim(1) : a.dim(0), k = trans_a ? a.dim(0) : a.dim(1);
  const std::int64_t kb = trans_b ? b.dim(1) : b.dim(0), n = trans_b ? b.dim(0) : b.dim(1);
  require(k == kb, kOp, "inner dimensions differ: " + a.describe() + " and " + b.describe());
  Tensor c = Tensor::empty({m, n}, a.dtype(), a.device());  // [M, N]
  detail::on_device(
      kOp, a,
      [&] {
        detail::dispatch_storage(kOp, a, [&](auto zero) {
          using T = decltype(zero);
          cpu::gemm<T>(trans_a, trans_b, m, n, k, 1, a.data<T>(), a.dim(1), b.data<T>(), b.dim(1), 0, c.data<T>(), n);
        });
      },
      [&](auto /*stream: cuBLASLt runs on the device context's*/) {
        detail::dispatch_cuda(kOp, a, [&](auto zero) {
          using T = decltype(zero);
          cuda::gemm<T, T>(trans_a, trans_b, m, n, k, 1, a.data<T>(), a.dim(1), b.data<T>(), b.dim(1), 0, c.data<T>(),
                           n, a.device().index);
        });
      });
  return c;
}

namespace {

// mask (relu only): on a GPU, the ReLU mask of cuBLASLt's epilogue where it wrote one, else undefined.
Tensor linear_forward(const char* kOp, const Tensor& x, const Tensor& weight, const Tensor& bias, bool relu,
                      Tensor* mask = nullptr) {
  detail::require_like(kOp, "x", x, x);
  detail::require_like(kOp, "weight", weight, x);
  require(weight.rank() == 2 && x.rank() >= 1 && x.dim(-1) == weight.dim(1), kOp,
          "x " + x.describe() + " does not match weight " + weight.describe());
  const std::int64_t in = weight.dim(1), out = weight.dim(0), rows = x.numel() / std::max<std::int64_t>(in, 1);
  if (bias.defined()) {
    detail::require_like(kOp, "bias", bias, x);
    detail::require_shape(kOp, "bias", bias, {out});
  }
  Shape shape = x.shape();
  shape.back() = out;
  Tensor y = Tensor::empty(shape, x.dtype(), x.device());  // [..., out]
  if (mask != nullptr) *mask = Tensor();
  detail::on_device(
      kOp, x,
      [&] {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          cpu::gemm_bias<T>(false, true, rows, out, in, x.data<T>(), in, weight.data<T>(), in,
                            bias.defined() ? bias.data<T>() : nullptr, y.data<T>());
          if (relu) cpu::relu_forward<T>(y.data<T>(), y.data<T>(), y.numel());
        });
      },
      [&](auto /*stream: cuBLASLt runs on the device context's*/) {
        const int device = x.device().index;
        detail::dispatch_cuda(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          const T* b = bias.defined() ? bias.data<T>() : nullptr;
          if (relu && mask != nullptr && cuda::grad_epilogues() == cuda::GradEpilogues::automatic) {
            Tensor bits = Tensor::empty({cuda::relu_mask_bytes(rows, out)}, DType::kU8, x.device());
            if (cuda::gemm_bias_relu_mask<T>(false, true, rows, out, in, x.data<T>(), in, weight.data<T>(), in, b,
                                             y.data<T>(), bits.raw_data(), device)) {
              *mask = bits;
              return;
            }
          }
          cuda::gemm_bias<T>(false, true, rows, out, in, x.data<T>(), in, weight.data<T>(), in, b, y.data<T>(), device,
                             relu);
        });
      });
  return y;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return linear_forward("linear", x, weight, bias, false);
}

Tensor linear_relu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return linear_forward("linear_relu", x, weight, bias, true);
}

Tensor linear_relu_masked(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& mask) {
  return linear_forward("linear_relu_masked", x, weight, bias, true, &mask);
}

Tensor linear_int8(const Tensor& x, const Tensor& qweight, const Tensor& scales, const Tensor& bias, bool relu) {
  constexpr const char* kOp = "linear_int8";
  require(x.device().is_cpu() && qweight.device().is_cpu(), kOp, "int8 decoding runs on the CPU only");
  require(
      x.dtype() == DType::kF32 && x.is_contiguous() && qweight.dtype() == DType::kI8 && qweight.rank() == 2 &&
          qweight.is_contiguous() && x.rank() >= 1 && x.dim(-1) == qweight.dim(1),
      kOp,
      "expected dense f32 x [..., in] and i8 weights [out, in], got " + x.describe() + " and " + qweight.describe());
  const std::int64_t in = qweight.dim(1), out = qweight.dim(0), rows = x.numel() / std::max<std::int64_t>(in, 1);
  require(scales.dtype() == DType::kF32 && scales.numel() == out, kOp, "scales must be f32 [out]");
  require(!bias.defined() || (bias.dtype() == DType::kF32 && bias.numel() == out), kOp, "bias must be f32 [out]");
  Shape shape = x.shape();
  shape.back() = out;
  Tensor y = Tensor::empty(shape, DType::kF32);
  cpu::linear_int8(x.data<float>(), rows, in, qweight.data<std::int8_t>(), scales.data<float>(), out,
                   bias.defined() ? bias.data<float>() : nullptr, relu, y.data<float>());
  return y;
}

Tensor linear_packed(const Tensor& x, const cpu::PackedWeights& weights, const Tensor& bias, bool relu,
                     const Tensor& scales) {
  constexpr const char* kOp = "linear_packed";
  require(x.device().is_cpu(), kOp, "packed weights are for decoding on the CPU");
  require(x.dtype() == DType::kF32 && x.is_contiguous() && x.rank() >= 1 && x.dim(-1) == weights.in(), kOp,
          "expected dense f32 x [..., " + std::to_string(weights.in()) + "], got " + x.describe());
  const std::int64_t in = weights.in(), out = weights.out(), rows = x.numel() / std::max<std::int64_t>(in, 1);
  require(!bias.defined() || (bias.dtype() == DType::kF32 && bias.is_contiguous() && bias.numel() == out), kOp,
          "bias must be f32 [out]");
  require(weights.is_s8() == scales.defined(), kOp, "s8 weights need their scales, f32 weights none");
  Shape shape = x.shape();
  shape.back() = out;
  Tensor y = Tensor::empty(shape, DType::kF32);
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
  if (weights.is_s8()) {
    require(scales.dtype() == DType::kF32 && scales.is_contiguous() && scales.numel() == out, kOp,
            "scales must be f32 [out]");
    cpu::linear_int8(x.data<float>(), rows, in, nullptr, scales.data<float>(), out, b, relu, y.data<float>(), &weights);
  } else {
    weights.linear_f32(x.data<float>(), rows, in, b, relu, y.data<float>());
  }
  return y;
}

namespace {

// linear_backward's three products; dx (x's shape and dtype) is assigned when `accumulate_dx` is
// false, else the product is added to it in the GEMM itself (beta = 1); a null dx: no input gradient.
// A non-null relu_mask (then dx is assigned): x is a ReLU's output, and dx becomes relu_backward(x,
// dy W), by cuBLASLt's DRELU epilogue where *relu_mask is defined (linear_relu_masked's mask).
void backward_products(const char* kOp, const Tensor& x, const Tensor& weight, const Tensor& dy, Tensor& dweight,
                       Tensor& dbias, Tensor* dx, bool accumulate_dx, const Tensor* relu_mask = nullptr) {
  // The same operand checks as the forward pass: the kernels below read x and weight as dense
  // row-major blocks, so a strided view would silently give wrong gradients.
  detail::require_like(kOp, "x", x, x);
  detail::require_like(kOp, "weight", weight, x);
  require(weight.rank() == 2 && x.rank() >= 1 && x.dim(-1) == weight.dim(1), kOp,
          "x " + x.describe() + " does not match weight " + weight.describe());
  const std::int64_t in = weight.dim(1), out = weight.dim(0), rows = x.numel() / std::max<std::int64_t>(in, 1);
  detail::require_like(kOp, "dy", dy, x);
  detail::require_accumulator(kOp, "dweight", dweight, x);
  require(dy.numel() == rows * out, kOp, "dy " + dy.describe() + " does not match x " + x.describe());
  detail::require_shape(kOp, "dweight", dweight, weight.shape());
  if (dbias.defined()) {
    detail::require_accumulator(kOp, "dbias", dbias, x);
    detail::require_shape(kOp, "dbias", dbias, {out});
  }
  if (relu_mask != nullptr && relu_mask->defined()) {
    require(relu_mask->dtype() == DType::kU8 && relu_mask->device() == x.device() && relu_mask->is_contiguous() &&
                relu_mask->numel() == cuda::relu_mask_bytes(rows, in),
            kOp, "relu_mask " + relu_mask->describe() + " is not linear_relu_masked's mask of x " + x.describe());
  }
  if (dx != nullptr && accumulate_dx) {
    detail::require_like(kOp, "dx", *dx, x);
    detail::require_shape(kOp, "dx", *dx, x.shape());
  } else if (dx != nullptr) {
    *dx = Tensor::empty(x.shape(), x.dtype(), x.device());  // [..., in]
  }
  detail::on_device(
      kOp, x,
      [&] {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          using Acc = acc_t<T>;
          // dW[out, in] += dy^T [out, rows] x [rows, in]   (accumulator dtype)
          cpu::gemm<T>(true, false, out, in, rows, 1, dy.data<T>(), out, x.data<T>(), in, 1, dweight.data<Acc>(), in);
          if (dbias.defined()) cpu::bias_backward<T>(dy.data<T>(), dbias.data<Acc>(), rows, out);
          // dx[rows, in] (+)= dy [rows, out] W [out, in]
          if (dx != nullptr) {
            cpu::gemm<T>(false, false, rows, in, out, 1, dy.data<T>(), out, weight.data<T>(), in, accumulate_dx ? 1 : 0,
                         dx->data<T>(), in);
            if (relu_mask != nullptr) cpu::relu_backward<T>(x.data<T>(), dx->data<T>(), dx->data<T>(), x.numel());
          }
        });
      },
      [&](auto stream) {
        // The CPU case's three steps, on the device's stream: dW += dy^T x with beta = 1 straight into
        // the f32 gradient; db += the column sums of dy, from the same product where cuBLASLt's
        // BGRADB epilogue is at hand (written into a scratch [out], then added), else by a
        // deterministic two-pass kernel (its workspace a [chunks, out] scratch tensor); dx (+)= dy W.
        const int device = x.device().index;
        detail::dispatch_cuda(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          using Acc = acc_t<T>;
          bool bias_done = false;
          if (dbias.defined() && cuda::grad_epilogues() == cuda::GradEpilogues::automatic) {
            Tensor db = Tensor::empty({out}, dbias.dtype(), x.device());
            bias_done = cuda::gemm_bias_grad<T>(out, in, rows, dy.data<T>(), out, x.data<T>(), in, dweight.data<Acc>(),
                                                in, db.data<Acc>(), device);
            if (bias_done) cuda::accumulate<Acc>(dbias.data<Acc>(), db.data<Acc>(), out, stream);
          }
          if (!bias_done) {
            cuda::gemm<T, Acc>(true, false, out, in, rows, 1, dy.data<T>(), out, x.data<T>(), in, 1,
                               dweight.data<Acc>(), in, device);
          }
          if (dbias.defined() && !bias_done) {
            Tensor workspace = Tensor::empty({cuda::column_sum_chunks(rows), out}, dbias.dtype(), x.device());
            cuda::bias_backward<T>(dy.data<T>(), dbias.data<Acc>(), rows, out, workspace.data<Acc>(), stream);
          }
          if (dx != nullptr && relu_mask != nullptr && relu_mask->defined() &&
              cuda::grad_epilogues() == cuda::GradEpilogues::automatic &&
              cuda::gemm_drelu<T>(false, false, rows, in, out, dy.data<T>(), out, weight.data<T>(), in, dx->data<T>(),
                                  relu_mask->raw_data(), device)) {
            return;  // dx with the ReLU's gradient applied in the product
          }
          if (dx != nullptr) {
            cuda::gemm<T, T>(false, false, rows, in, out, 1, dy.data<T>(), out, weight.data<T>(), in,
                             accumulate_dx ? 1 : 0, dx->data<T>(), in, device);
            if (relu_mask != nullptr)
              cuda::relu_backward<T>(x.data<T>(), dx->data<T>(), dx->data<T>(), x.numel(), stream);
          }
        });
      });
}

}  // namespace

Tensor linear_backward(const Tensor& x, const Tensor& weight, const Tensor& dy, Tensor& dweight, Tensor& dbias,
                       bool need_dx) {
  Tensor dx;
  backward_products("linear_backward", x, weight, dy, dweight, dbias, need_dx ? &dx : nullptr, false);
  return dx;
}

void linear_backward_into(const Tensor& x, const Tensor& weight, const Tensor& dy, Tensor& dweight, Tensor& dbias,
                          Tensor& dx) {
  backward_products("linear_backward_into", x, weight, dy, dweight, dbias, &dx, dx.defined());
}

Tensor linear_backward_relu(const Tensor& x, const Tensor& weight, const Tensor& dy, Tensor& dweight, Tensor& dbias,
                            const Tensor& relu_mask) {
  Tensor dx;
  backward_products("linear_backward_relu", x, weight, dy, dweight, dbias, &dx, false, &relu_mask);
  return dx;
}

QuantizedWeights quantize_weights(const Tensor& weight) {
  constexpr const char* kOp = "quantize_weights";
  detail::require(weight.rank() == 2 && weight.dtype() == DType::kF32 && weight.device().is_cpu(), kOp,
                  "expected f32 [out, in] weights on the CPU, got " + weight.describe());
  const std::int64_t out = weight.dim(0), in = weight.dim(1);
  QuantizedWeights q{Tensor::empty({out, in}, DType::kI8), Tensor::empty({out}, DType::kF32)};
  cpu::quantize_weights(weight.contiguous().data<float>(), out, in, q.qweight.data<std::int8_t>(),
                        q.scales.data<float>());
  return q;
}

std::shared_ptr<const cpu::PackedWeights> pack_weights(const Tensor& weight) {
  constexpr const char* kOp = "pack_weights";
  detail::require(
      weight.rank() == 2 && weight.device().is_cpu() && (weight.dtype() == DType::kF32 || weight.dtype() == DType::kI8),
      kOp, "expected f32 or i8 [out, in] weights on the CPU, got " + weight.describe());
  const std::int64_t out = weight.dim(0), in = weight.dim(1);
  if (weight.dtype() == DType::kI8)
    return cpu::PackedWeights::pack_s8(weight.contiguous().data<std::int8_t>(), out, in);
  return cpu::PackedWeights::pack_f32(weight.contiguous().data<float>(), out, in);
}

}  // namespace dragoman::ops
