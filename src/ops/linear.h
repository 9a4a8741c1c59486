// Linear layers and matrix products on tensors (CPU: kernels/gemm.h, oneDNN or OpenBLAS; CUDA:
// kernels/gemm.h, cuBLASLt, f32/bf16/f16 only).
// Operand classes (ops/dispatch.h): x, weight, bias, y, dy and dx are activations of one dtype (f64,
// f32, bf16 or f16: the weights the forward reads are in the compute dtype); dweight and dbias are
// parameter gradients of accumulator_dtype (f32 for bf16/f16), accumulated (+=). bf16/f16 products
// are summed in float and each stored element is rounded once (y includes the bias before rounding).
#pragma once

#include <memory>

#include "core/tensor.h"
#include "kernels/cpu/packed_gemm.h"

namespace dragoman::ops {

using PackedWeights = cpu::PackedWeights;  // weights packed once for decoding (kernels/cpu/packed_gemm.h)

// Row-invariant products for decoding (kernels/gemm.h): each CPU product of a row does not depend
// on the other rows it is computed with, so a sentence translates the same in any batch.
// Process-wide; off by default (training never sets it).
void set_row_invariant_products(bool on);

// op(a) op(b) for 2-D a and b.   a: [M, K] (or [K, M] when trans_a), b: [K, N] (or [N, K])
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// y = x W^T + bias, over the last dimension.   x: [..., in], weight: [out, in], bias: [out] or
// undefined -> y: [..., out]
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

// relu(linear(x, weight, bias)): the feed-forward layer's first half in one pass on CUDA (cuBLASLt's
// RELU_BIAS epilogue); on the CPU the product, then the ReLU in place. Equal to ops::relu of ops::linear
// bit for bit on the CPU (rounding commutes with max(., 0)).
Tensor linear_relu(const Tensor& x, const Tensor& weight, const Tensor& bias);

// linear_relu for training's feed-forward layer: the same output, and on a GPU the ReLU mask that
// cuBLASLt's epilogue writes beside it (u8 [cuda::relu_mask_bytes(rows, out)], kernels/gemm.h)
// in `mask` for linear_backward_relu; `mask` is undefined where none was written (the CPU, no
// algorithm, cuda::grad_epilogues() off).
Tensor linear_relu_masked(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& mask);

// linear (or linear_relu) with int8 weights (kernels/cpu/quantize.h): x's rows quantized to int8
// as they come, exact int32 products, scaled back to f32. CPU only; decoding only (no backward).
//   x: f32 [..., in], qweight: i8 [out, in], scales: f32 [out], bias: f32 [out] or undefined
Tensor linear_int8(const Tensor& x, const Tensor& qweight, const Tensor& scales, const Tensor& bias, bool relu = false);

// linear_int8's weights from f32 weights [out, in] (CPU): qweight i8 [out, in] and scales f32 [out],
// one scale per output row, 7-bit where oneDNN's int8 products would saturate (kernels/cpu/quantize.h).
struct QuantizedWeights {
  Tensor qweight;
  Tensor scales;
};
QuantizedWeights quantize_weights(const Tensor& weight);

// Weights packed once for linear_packed (CPU): f32 [out, in], or i8 [out, in] from quantize_weights.
// Null where packing gains nothing (kernels/cpu/packed_gemm.h says when).
std::shared_ptr<const cpu::PackedWeights> pack_weights(const Tensor& weight);

// linear (or linear_relu) with weights packed once for decoding (kernels/cpu/packed_gemm.h:
// oneDNN's matmul on its blocked layout). f32 weights: the product of linear up to the order of the
// sums. s8 weights (packed from linear_int8's qweight): linear_int8 bit for bit, with its `scales`.
// CPU only; decoding only (no backward).   x: f32 [..., in], bias: f32 [out] or undefined
Tensor linear_packed(const Tensor& x, const cpu::PackedWeights& weights, const Tensor& bias, bool relu = false,
                     const Tensor& scales = Tensor());

// Backward of linear: dweight += dy^T x, dbias += sum of dy's rows (when defined; an undefined
// dbias is a layer without bias), and returns dx = dy W (or an undefined tensor when need_dx is
// false).   dweight: [out, in] and dbias: [out] of accumulator_dtype(x.dtype())
Tensor linear_backward(const Tensor& x, const Tensor& weight, const Tensor& dy, Tensor& dweight, Tensor& dbias,
                       bool need_dx = true);

// linear_backward with the input gradient summed into dx: an undefined dx is assigned dy W (a new
// tensor), a defined one (x's shape and dtype; not aliasing x, dy or weight) becomes dx + dy W in the
// product itself (the GEMM's beta = 1: a bf16/f16 dx is rounded once, not once for the product and
// again for the sum). The residual connections and the attention projections that share an input
// add their gradients this way instead of in separate passes (model/layers.h).
void linear_backward_into(const Tensor& x, const Tensor& weight, const Tensor& dy, Tensor& dweight, Tensor& dbias,
                          Tensor& dx);

// linear_backward of a layer whose input x is a ReLU's output (the feed-forward's second layer
// without dropout between): returns the gradient at the ReLU's input, relu_backward(x, dy W). With
// linear_relu_masked's mask (defined: on a GPU), the ReLU's gradient is applied in dx's product
// (cuBLASLt's DRELU epilogue: no pass of its own over dx; equal to relu_backward's wherever the
// ReLU's input and x agree in being positive, see cuda::gemm_drelu), else by relu_backward.
Tensor linear_backward_relu(const Tensor& x, const Tensor& weight, const Tensor& dy, Tensor& dweight, Tensor& dbias,
                            const Tensor& relu_mask);

}  // namespace dragoman::ops
