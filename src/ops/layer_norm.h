// Layer normalisation over the last dimension (kernels/layer_norm.h). x, weight, bias, y, dy
// and dx are activations of one dtype (f64, f32, bf16 or f16); the saved statistics and the
// parameter gradients are of its accumulator dtype (f64 for f64, f32 otherwise).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace dragoman::ops {

// What the backward pass needs from the forward pass.
struct LayerNormSaved {
  Tensor mean;  // [rows], accumulator dtype
  Tensor rstd;  // [rows], accumulator dtype
};

// x: [..., D]; weight, bias: [D] -> [..., D]. Fills *saved when given.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, LayerNormSaved* saved);

// layer_norm(x + residual) without the statistics, for decoding's post-norm residual blocks: on the
// CPU in one pass (cpu::add_layer_norm_forward, the same bits as ops::add then layer_norm); on a
// GPU ops::add then layer_norm.   x, residual: [..., D] of one dtype and shape
Tensor add_layer_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, const Tensor& bias, double eps);

// Returns dx (x's dtype); dweight += ..., dbias += ... (accumulator dtype, [D]).
Tensor layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const LayerNormSaved& saved,
                           Tensor& dweight, Tensor& dbias);

// layer_norm_backward's dx and dropped = ops::dropout(dx, p, seed, rng_stream), bit for bit: a
// post-norm residual block's backward, where dx is the residual's gradient and dropped the
// sublayer output's. p == 0: dropped is dx itself (as ops::dropout returns it). On a GPU the dx
// kernel writes both where the rows take its register path (kernels/layer_norm.h DxDropout),
// so dx is not read again; the CPU runs the two ops.
struct LayerNormDropoutGrads {
  Tensor dx, dropped;
};
LayerNormDropoutGrads layer_norm_backward_dropout(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                  const LayerNormSaved& saved, Tensor& dweight, Tensor& dbias, double p,
                                                  std::uint64_t seed, std::uint64_t rng_stream);

}  // namespace dragoman::ops
