// Element-wise ops on tensors: residual add, accumulation, scaling, ReLU, dropout, norms.
// Operands are activations of one dtype (f64, f32, bf16 or f16), on one device, with the same
// element count, contiguous. Each result element is computed in the accumulator type and rounded
// once to the dtype (kernels/elementwise.h).
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "kernels/common/clip.h"

namespace dragoman::ops {

// a + b (a new tensor of a's shape).
Tensor add(const Tensor& a, const Tensor& b);
// y += x.
void add_(Tensor& y, const Tensor& x);
// y *= s.
void scale_(Tensor& y, double s);

Tensor relu(const Tensor& x);
// dx = dy * (y > 0) from the forward output y.
Tensor relu_backward(const Tensor& y, const Tensor& dy);
// x * sigmoid(x) (Swish, SiLU).
Tensor swish(const Tensor& x);
// dx = dy * swish'(x) from the forward's input x.
Tensor swish_backward(const Tensor& x, const Tensor& dy);

// Inverted dropout with counter-based randomness (kernels/elementwise.h). p == 0 returns x
// itself. The backward pass is the same call on the gradient with the same seed and rng_stream.
Tensor dropout(const Tensor& x, double p, std::uint64_t seed, std::uint64_t rng_stream);
// x + dropout(y) in one pass (a residual connection's sum): ops::add(x, ops::dropout(y, ...)) bit
// for bit, without the dropped tensor. p == 0 is ops::add(x, y).
Tensor dropout_add(const Tensor& x, const Tensor& y, double p, std::uint64_t seed, std::uint64_t rng_stream);

// Sum of squares, accumulated in double (any float dtype).
double sum_squares(const Tensor& x);

// An update's gradient norm and the factor its gradients take before the optimizer
// (kernels/common/clip.h: 1 / loss_scale, times clip_norm / norm above clip_norm; NaN for a
// non-finite norm), left on the gradients' device: f64 [2] = {norm, factor}, computed from
// sum_squares(grads) without a copy to the host, so an update can run on without waiting for it
// (ops::adam_step reads the factor there; the trainer reads the norm later).
Tensor grad_norm_factor(const Tensor& grads, double clip_norm, double loss_scale);

// The same on the host, from a sum of squares already read back (the trainer's CPU path): the
// function the op and its CUDA twin call, so the three give the same bits.
using common::NormFactor;
using common::norm_factor;

}  // namespace dragoman::ops
