// The Transformer's building blocks with explicit forward and backward passes, side by side
// (as in llm.c). Parameters are views into a ParameterSet (model/parameters.h).
//
// Contract of every backward here: activation gradients are returned (assigned), parameter
// gradients are accumulated (+=) into the d* views, so gradient accumulation over several batches
// and tied weights (one view used twice) need no extra code. Forward passes take their parameters
// as const (they only read the weights); backward passes take them as non-const references, since
// they write the gradient views.
//
// Shapes: B batch, L sequence length (S source, T target), D d_model, F d_ff, H heads, K d_k, Kv d_v.
#pragma once

#include <cstdint>
#include <memory>

#include "core/tensor.h"
#include "model/config.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"

namespace dragoman::model {

struct Linear {
  Tensor weight, bias;    // [out, in], [out] (bias may be undefined)
  Tensor dweight, dbias;  // gradient views
  // int8 decoding (Transformer::quantize_int8): the weight quantized per output row, and the scales.
  Tensor qweight, qscale;  // i8 [out, in], f32 [out]; undefined otherwise
  // CPU decoding (Transformer::pack_weights): the weights the products read (qweight when it is
  // defined, else weight) packed once (kernels/cpu/packed_gemm.h); null otherwise.
  std::shared_ptr<const ops::PackedWeights> packed;
};

// Whether `p` is set: one of the model's layers, or one pack_weights made (whose f32 weight may be
// gone once packed, or never made when it computes in int8).
inline bool is_set(const Linear& p) { return p.weight.defined() || p.qweight.defined() || p.packed != nullptr; }

// x W^T + b through `p` (then max(., 0) with relu): its packed weights when it has them
// (ops::linear_packed: f32, or int8 with qscale), else its int8 weights (ops::linear_int8), else
// ops::linear / ops::linear_relu.
Tensor apply(const Linear& p, const Tensor& x, bool relu = false);

struct LayerNormParams {
  Tensor weight, bias, dweight, dbias;  // [D]
};

struct AttentionParams {
  Linear q, k, v, out;  // q, k: [H*K, D]; v: [H*Kv, D]; out: [D, H*Kv]
  // Decoding (Transformer::pack_weights): q, k and v stacked into one layer, for self-attention's
  // three products of one input [2*H*K + H*Kv, D]; k and v, for cross-attention's two of the
  // encoder's output [H*K + H*Kv, D]. Unset (is_set false) otherwise.
  Linear qkv, kv;
};

struct FeedForwardParams {
  Linear fc1, fc2;  // [F, D], [D, F]
  Activation activation = Activation::kRelu;
};

// One dropout site: its probability and its place in the counter-based random numbers (its Philox rng_stream). p == 0
// (or evaluation) is the identity. The backward pass applies the same mask to the gradient.
struct Dropout {
  double p = 0;
  std::uint64_t seed = 0, rng_stream = 0;
  Tensor apply(const Tensor& x) const { return p > 0 ? ops::dropout(x, p, seed, rng_stream) : x; }
  // x + apply(y) in one pass (ops::dropout_add: the same bits).
  Tensor add_to(const Tensor& x, const Tensor& y) const { return ops::dropout_add(x, y, p, seed, rng_stream); }
};

// Hands out dropout sites in forward order: site i of training batch s on data-parallel rank r uses
// the dropout purpose's rng_stream (r << 48) | (s << 24) | i (base/philox.h), so a batch's masks are
// a function of (seed, batch, rank) alone, the same after a resume, and never the numbers of another
// purpose. Batches count to 2^24 (16.7 million), sites per batch and ranks to 2^24 and 2^12.
class DropoutSites {
 public:
  DropoutSites() = default;  // evaluation: every site is the identity
  DropoutSites(std::uint64_t seed, std::uint64_t step, std::uint64_t rank = 0);
  Dropout next(double p) { return training_ ? Dropout{p, seed_, base_ + next_++} : Dropout{}; }
  bool training() const { return training_; }

 private:
  bool training_ = false;
  std::uint64_t seed_ = 0, base_ = 0, next_ = 0;
};

// ---- Multi-head attention with its projections ----------------------------------------------

struct AttentionActivations {
  Tensor xq, xkv;  // inputs [B, T, D], [B, S, D]
  Tensor q, k, v;  // [B, T, H*K], [B, S, H*K], [B, S, H*Kv]
  Tensor context;  // [B, T, H*Kv] (before the output projection)
  Tensor key_lengths;
  ops::AttentionOptions options;
  ops::AttentionSaved saved;
};

// Self-attention's projections of x [B, T, D] (no activations kept): q [B, T, H*K] dense, k and v
// [B, T, H*K], [B, T, H*Kv] (views of one product when pack_weights stacked p.qkv, else p.k's and
// p.v's products).
struct Projections {
  Tensor q, k, v;
};
Projections self_attention_projections(const AttentionParams& p, const Tensor& x);

// out = concat_h(softmax(q_h k_h^T / sqrt(K)) v_h) Wo^T + bo.   -> [B, T, D]
// Self-attention passes one tensor object as xq and xkv: without act (decoding), p.qkv then does
// the three projections in one product when pack_weights made it.
Tensor attention_forward(const AttentionParams& p, const Tensor& xq, const Tensor& xkv, const Tensor& key_lengths,
                         const ops::AttentionOptions& options, AttentionActivations* act);

// The input gradients are summed into dxq [B, T, D] and dxkv [B, S, D] as ops::linear_backward_into
// does (an undefined tensor is assigned, a defined one added to in the products themselves).
// Self-attention passes one tensor object as both: q's, k's and v's products then all add into it.
void attention_backward(AttentionParams& p, const AttentionActivations& act, const Tensor& dout, Tensor& dxq,
                        Tensor& dxkv);

// ---- Position-wise feed-forward ---------------------------------------------------------------

struct FeedForwardActivations {
  Tensor x;        // [B, L, D]
  Tensor pre;      // fc1(x) [B, L, F] (Swish: its backward reads the input; undefined for ReLU)
  Tensor hidden;   // act(fc1(x)) [B, L, F]
  Tensor dropped;  // relu dropout of hidden
  Dropout relu_dropout;
  Tensor relu_mask;  // ReLU without its dropout, on a GPU: ops::linear_relu_masked's mask (else undefined)
};

// fc2(dropout(act(fc1(x)))), act = p.activation (ReLU or Swish).   -> [B, L, D]
Tensor feed_forward_forward(const FeedForwardParams& p, const Tensor& x, const Dropout& relu_dropout,
                            FeedForwardActivations* act);
// The input gradient is summed into dx [B, L, D] as attention_backward's are.
void feed_forward_backward(FeedForwardParams& p, const FeedForwardActivations& act, const Tensor& dy, Tensor& dx);

// ---- Residual connection with layer normalisation -----------------------------------------------

struct ResidualActivations {
  Tensor x;    // pre-norm: the input (layer norm's input)
  Tensor sum;  // post-norm: x + dropout(sublayer(x)) (layer norm's input)
  ops::LayerNormSaved norm;
  Dropout dropout;
};

// post: LN(x + dropout(f(x)));  pre: x + dropout(f(LN(x))).   f: [B, L, D] -> [B, L, D]
template <typename F>
Tensor residual_forward(NormPlacement placement, const LayerNormParams& norm, double eps, const Tensor& x,
                        const Dropout& dropout, ResidualActivations* act, F&& f) {
  ops::LayerNormSaved* saved = act != nullptr ? &act->norm : nullptr;
  if (act != nullptr) act->dropout = dropout;
  if (placement == NormPlacement::kPre) {
    const Tensor normed = ops::layer_norm(x, norm.weight, norm.bias, eps, saved);
    if (act != nullptr) act->x = x;
    return dropout.add_to(x, f(normed));
  }
  if (act == nullptr) return ops::add_layer_norm(x, dropout.apply(f(x)), norm.weight, norm.bias, eps);  // one pass
  const Tensor sum = dropout.add_to(x, f(x));
  act->sum = sum;
  return ops::layer_norm(sum, norm.weight, norm.bias, eps, saved);
}

// g(dout, dx): the sublayer's backward, summing d(sublayer input) into dx as attention_backward does
// and accumulating its parameter gradients. Post-norm hands g the layer norm's input gradient dsum
// as dx, so the residual's own term costs no pass of its own.
template <typename G>
Tensor residual_backward(NormPlacement placement, LayerNormParams& norm, const ResidualActivations& act,
                         const Tensor& dy, G&& g) {
  if (placement == NormPlacement::kPre) {
    Tensor dnormed;  // assigned by g
    g(act.dropout.apply(dy), dnormed);
    Tensor dx = ops::layer_norm_backward(dnormed, act.x, norm.weight, act.norm, norm.dweight, norm.dbias);
    ops::add_(dx, dy);
    return dx;
  }
  // dsum and its dropout (the sublayer output's gradient) from one pass on a GPU.
  const Dropout& d = act.dropout;
  ops::LayerNormDropoutGrads grads = ops::layer_norm_backward_dropout(dy, act.sum, norm.weight, act.norm, norm.dweight,
                                                                      norm.dbias, d.p, d.seed, d.rng_stream);
  // Without dropout, dropped is dsum itself: the sum then starts from a copy, since g reads it.
  Tensor dx = grads.dropped.shares_storage(grads.dx) ? grads.dx.clone() : grads.dx;
  g(grads.dropped, dx);
  return dx;
}

}  // namespace dragoman::model
