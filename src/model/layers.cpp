// Attention and feed-forward blocks (see layers.h).
#include "model/layers.h"

#include <string>

#include "base/error.h"
#include "base/philox.h"
#include "ops/linear.h"

namespace dragoman::model {

Tensor apply(const Linear& p, const Tensor& x, bool relu) {
  if (p.packed) return ops::linear_packed(x, *p.packed, p.bias, relu, p.packed->is_s8() ? p.qscale : Tensor());
  if (p.qweight.defined()) return ops::linear_int8(x, p.qweight, p.qscale, p.bias, relu);
  return relu ? ops::linear_relu(x, p.weight, p.bias) : ops::linear(x, p.weight, p.bias);
}

DropoutSites::DropoutSites(std::uint64_t seed, std::uint64_t step, std::uint64_t rank)
    : training_(true),
      seed_(seed),
      base_(philox::purpose_stream(philox::Purpose::kDropout, (rank << 48) | (step << 24))) {
  if (step >= (std::uint64_t{1} << 24) || rank >= (std::uint64_t{1} << 12)) {
    throw Error("dropout: batch " + std::to_string(step) + " of rank " + std::to_string(rank) +
                " is beyond the random streams of dropout (2^24 batches, 2^12 ranks)");
  }
}

Projections self_attention_projections(const AttentionParams& p, const Tensor& x) {
  if (!is_set(p.qkv)) return {apply(p.q, x), apply(p.k, x), apply(p.v, x)};
  const Tensor qkv = apply(p.qkv, x);  // [B, T, 2*H*K + H*Kv]
  const std::int64_t dk = p.q.weight.dim(0);
  const int last = qkv.rank() - 1;
  return {qkv.narrow(last, 0, dk).contiguous(), qkv.narrow(last, dk, dk), qkv.narrow(last, 2 * dk, p.v.weight.dim(0))};
}

Tensor attention_forward(const AttentionParams& p, const Tensor& xq, const Tensor& xkv, const Tensor& key_lengths,
                         const ops::AttentionOptions& options, AttentionActivations* act) {
  if (act == nullptr && is_set(p.qkv) && &xq == &xkv) {  // decoding's self-attention: one product
    const Projections qkv = self_attention_projections(p, xq);
    return apply(p.out, ops::attention(qkv.q, qkv.k, qkv.v, key_lengths, options, nullptr));
  }
  const Tensor q = apply(p.q, xq);   // [B, T, H*K]
  const Tensor k = apply(p.k, xkv);  // [B, S, H*K]
  const Tensor v = apply(p.v, xkv);  // [B, S, H*Kv]
  ops::AttentionSaved* saved = act != nullptr ? &act->saved : nullptr;
  const Tensor context = ops::attention(q, k, v, key_lengths, options, saved);  // [B, T, H*Kv]
  if (act != nullptr) {
    act->xq = xq;
    act->xkv = xkv;
    act->q = q;
    act->k = k;
    act->v = v;
    act->context = context;
    act->key_lengths = key_lengths;
    act->options = options;
  }
  return apply(p.out, context);  // [B, T, D]
}

void attention_backward(AttentionParams& p, const AttentionActivations& act, const Tensor& dout, Tensor& dxq,
                        Tensor& dxkv) {
  Linear &out = p.out, &q = p.q, &k = p.k, &v = p.v;
  const Tensor dcontext = ops::linear_backward(act.context, out.weight, dout, out.dweight, out.dbias);
  const ops::AttentionGrads g =
      ops::attention_backward(act.q, act.k, act.v, act.key_lengths, act.options, act.saved, dcontext);
  ops::linear_backward_into(act.xq, q.weight, g.dq, q.dweight, q.dbias, dxq);
  ops::linear_backward_into(act.xkv, k.weight, g.dk, k.dweight, k.dbias, dxkv);
  ops::linear_backward_into(act.xkv, v.weight, g.dv, v.dweight, v.dbias, dxkv);
}

Tensor feed_forward_forward(const FeedForwardParams& p, const Tensor& x, const Dropout& relu_dropout,
                            FeedForwardActivations* act) {
  const bool relu = p.activation == Activation::kRelu;
  // Training a ReLU without dropout after it: fc2's backward applies the ReLU's gradient in its input
  // gradient's product on a GPU, from the mask fc1's product writes (ops::linear_relu_masked).
  const bool masked = relu && act != nullptr && relu_dropout.p == 0 && !p.fc1.packed && !p.fc1.qweight.defined();
  Tensor mask;
  const Tensor pre = relu ? Tensor() : apply(p.fc1, x);  // [B, L, F]
  const Tensor hidden = masked ? ops::linear_relu_masked(x, p.fc1.weight, p.fc1.bias, mask)
                        : relu ? apply(p.fc1, x, true)
                               : ops::swish(pre);  // [B, L, F]
  const Tensor dropped = relu_dropout.apply(hidden);
  if (act != nullptr) *act = {x, pre, hidden, dropped, relu_dropout, mask};
  return apply(p.fc2, dropped);  // [B, L, D]
}

void feed_forward_backward(FeedForwardParams& p, const FeedForwardActivations& act, const Tensor& dy, Tensor& dx) {
  Linear &fc1 = p.fc1, &fc2 = p.fc2;
  Tensor dhidden;                                       // [B, L, F]
  if (!act.pre.defined() && act.relu_dropout.p == 0) {  // ReLU, nothing between it and fc2
    dhidden = ops::linear_backward_relu(act.hidden, fc2.weight, dy, fc2.dweight, fc2.dbias, act.relu_mask);
  } else {
    const Tensor ddropped = ops::linear_backward(act.dropped, fc2.weight, dy, fc2.dweight, fc2.dbias);
    dhidden = act.pre.defined() ? ops::swish_backward(act.pre, act.relu_dropout.apply(ddropped))
                                : ops::relu_backward(act.hidden, act.relu_dropout.apply(ddropped));
  }
  ops::linear_backward_into(act.x, fc1.weight, dhidden, fc1.dweight, fc1.dbias, dx);  // [B, L, D]
}

}  // namespace dragoman::model
