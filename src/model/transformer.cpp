// The Transformer (see transformer.h and docs/MODEL.md).
#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/numeric.h"
#include "model/layers.h"
#include "model/transformer_views.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/linear.h"

namespace dragoman::model {

using model::AttentionActivations;
using model::AttentionParams;
using model::Dropout;
using model::DropoutSites;
using model::FeedForwardActivations;
using model::FeedForwardParams;
using model::LayerNormParams;
using model::Linear;
using model::ResidualActivations;

// ---- Parameters ---------------------------------------------------------------------------------

namespace {

void add_linear(std::vector<ParameterSpec>& specs, const std::string& name, std::int64_t out, std::int64_t in) {
  specs.push_back({name + ".weight", {out, in}, ParameterInit::kXavierUniform, 0});
  specs.push_back({name + ".bias", {out}, ParameterInit::kZeros, 0});
}

void add_norm(std::vector<ParameterSpec>& specs, const std::string& name, std::int64_t d) {
  specs.push_back({name + ".weight", {d}, ParameterInit::kOnes, 0});
  specs.push_back({name + ".bias", {d}, ParameterInit::kZeros, 0});
}

void add_attention(std::vector<ParameterSpec>& specs, const std::string& name, const ModelConfig& c) {
  const std::int64_t hk = c.heads * c.key_size(), hv = c.heads * c.value_size();
  add_linear(specs, name + ".q_proj", hk, c.d_model);
  add_linear(specs, name + ".k_proj", hk, c.d_model);
  add_linear(specs, name + ".v_proj", hv, c.d_model);
  add_linear(specs, name + ".out_proj", c.d_model, hv);
}

void add_ffn(std::vector<ParameterSpec>& specs, const std::string& name, const ModelConfig& c) {
  add_linear(specs, name + ".fc1", c.d_ff, c.d_model);
  add_linear(specs, name + ".fc2", c.d_model, c.d_ff);
}

}  // namespace

namespace {

// The buckets of Transformer::gradient_buckets() for this parameter set.
std::vector<GradientRange> make_gradient_buckets(const ParameterSet& params, const ModelConfig& c) {
  std::vector<GradientRange> buckets;
  std::vector<bool> covered(params.entries().size(), false);
  const auto layer = [&](const std::string& prefix) {
    GradientRange range{params.size(), 0};
    for (std::size_t e = 0; e < params.entries().size(); ++e) {
      const ParameterEntry& entry = params.entries()[e];
      if (entry.spec.name.rfind(prefix, 0) != 0) continue;
      range.first = std::min(range.first, entry.offset);
      range.second = std::max(range.second, entry.offset + entry.numel);
      covered[e] = true;
    }
    buckets.push_back(range);  // a layer's parameters are consecutive (transformer_parameter_specs)
  };
  for (std::int64_t i = c.decoder_layers; i-- > 0;) layer("decoder.layers." + std::to_string(i) + ".");
  for (std::int64_t i = c.encoder_layers; i-- > 0;) layer("encoder.layers." + std::to_string(i) + ".");
  for (std::size_t e = 0; e < params.entries().size(); ++e) {
    if (covered[e]) continue;
    const ParameterEntry& entry = params.entries()[e];
    if (!buckets.empty() && e > 0 && !covered[e - 1] && buckets.back().second == entry.offset) {
      buckets.back().second += entry.numel;  // extends the previous uncovered run
    } else {
      buckets.push_back({entry.offset, entry.offset + entry.numel});
    }
  }
  return buckets;
}

}  // namespace

std::vector<ParameterSpec> transformer_parameter_specs(const ModelConfig& c) {
  std::vector<ParameterSpec> specs;
  const double embed_std = 1.0 / std::sqrt(static_cast<double>(c.d_model));
  if (c.share_embeddings) {
    specs.push_back({"embed.weight", {c.tgt_vocab_size, c.d_model}, ParameterInit::kNormal, embed_std});
  } else {
    specs.push_back({"encoder.embed.weight", {c.src_vocab_size, c.d_model}, ParameterInit::kNormal, embed_std});
    specs.push_back({"decoder.embed.weight", {c.tgt_vocab_size, c.d_model}, ParameterInit::kNormal, embed_std});
  }
  if (!c.tie_output) {
    specs.push_back({"output.weight", {c.tgt_vocab_size, c.d_model}, ParameterInit::kXavierUniform, 0});
  }
  if (c.output_bias) specs.push_back({"output.bias", {c.tgt_vocab_size}, ParameterInit::kZeros, 0});
  if (c.positions == PositionKind::kLearned) {
    for (const char* side : {"encoder", "decoder"}) {
      specs.push_back(
          {std::string(side) + ".positions.weight", {c.max_positions, c.d_model}, ParameterInit::kNormal, embed_std});
    }
  }
  for (std::int64_t i = 0; i < c.encoder_layers; ++i) {
    const std::string layer = "encoder.layers." + std::to_string(i);
    add_attention(specs, layer + ".self_attn", c);
    add_norm(specs, layer + ".self_attn_norm", c.d_model);
    add_ffn(specs, layer + ".ffn", c);
    add_norm(specs, layer + ".ffn_norm", c.d_model);
  }
  for (std::int64_t i = 0; i < c.decoder_layers; ++i) {
    const std::string layer = "decoder.layers." + std::to_string(i);
    add_attention(specs, layer + ".self_attn", c);
    add_norm(specs, layer + ".self_attn_norm", c.d_model);
    add_attention(specs, layer + ".cross_attn", c);
    add_norm(specs, layer + ".cross_attn_norm", c.d_model);
    add_ffn(specs, layer + ".ffn", c);
    add_norm(specs, layer + ".ffn_norm", c.d_model);
  }
  if (c.norm == NormPlacement::kPre) {
    add_norm(specs, "encoder.final_norm", c.d_model);
    add_norm(specs, "decoder.final_norm", c.d_model);
  }
  return specs;
}

namespace {

// The compute weights (what the forward reads) and the gradients of a layer (what the backward
// writes: hence a non-const set).
Linear bind_linear(ParameterSet& p, const std::string& name) {
  Linear linear;
  linear.weight = p.compute_value(name + ".weight");
  linear.bias = p.compute_value(name + ".bias");
  linear.dweight = p.grad(name + ".weight");
  linear.dbias = p.grad(name + ".bias");
  return linear;
}

LayerNormParams bind_norm(ParameterSet& p, const std::string& name) {
  return {p.compute_value(name + ".weight"), p.compute_value(name + ".bias"), p.grad(name + ".weight"),
          p.grad(name + ".bias")};
}

AttentionParams bind_attention(ParameterSet& p, const std::string& name) {
  AttentionParams a;
  a.q = bind_linear(p, name + ".q_proj");
  a.k = bind_linear(p, name + ".k_proj");
  a.v = bind_linear(p, name + ".v_proj");
  a.out = bind_linear(p, name + ".out_proj");
  return a;  // qkv and kv: pack_weights's
}

FeedForwardParams bind_ffn(ParameterSet& p, const std::string& name, Activation activation) {
  return {bind_linear(p, name + ".fc1"), bind_linear(p, name + ".fc2"), activation};
}

}  // namespace

// ---- What the backward pass needs -----------------------------------------------------------

struct ForwardActivations::State {
  struct EncoderLayer {
    ResidualActivations attn_residual, ffn_residual;
    AttentionActivations attn;
    FeedForwardActivations ffn;
  };
  struct DecoderLayer {
    ResidualActivations self_residual, cross_residual, ffn_residual;
    AttentionActivations self_attn, cross_attn;
    FeedForwardActivations ffn;
  };
  Batch batch;
  Dropout src_embed_dropout, tgt_embed_dropout;
  std::vector<EncoderLayer> encoder;
  std::vector<DecoderLayer> decoder;
  Tensor encoder_last;  // pre-norm: input of the encoder's final norm
  Tensor decoder_last;  // pre-norm: input of the decoder's final norm
  ops::LayerNormSaved encoder_final, decoder_final;
  Tensor encoder_output;  // [B, S, D]
  Tensor decoder_output;  // [B, T, D] (input of the output projection)
  Tensor dlogits;         // [B*T, V]: d(loss_sum)/d(logits), written by the forward pass (fused)
  double dlogits_scale = 1.0;  // ... times this (ForwardOptions::dlogits_scale)
};

ForwardActivations::ForwardActivations() = default;
ForwardActivations::~ForwardActivations() = default;
ForwardActivations::ForwardActivations(ForwardActivations&&) noexcept = default;
ForwardActivations& ForwardActivations::operator=(ForwardActivations&&) noexcept = default;

Transformer::Transformer(const ModelConfig& config, DType dtype, Device device)
    : Transformer(config, ParameterPrecision{dtype, dtype, true}, device) {}

Transformer::Transformer(const ModelConfig& config, const ParameterPrecision& precision, Device device)
    : config_(config) {
  config_.validate();
  params_ = ParameterSet(transformer_parameter_specs(config_), precision, device);
  const DType dtype = precision.compute;
  views_ = std::make_unique<Views>();
  Views& v = *views_;
  ParameterSet& p = params_;
  const auto matrix = [&](const std::string& name) { return Views::Matrix{p.compute_value(name), p.grad(name)}; };
  v.src_embed = matrix(config_.share_embeddings ? "embed.weight" : "encoder.embed.weight");
  v.tgt_embed = matrix(config_.share_embeddings ? "embed.weight" : "decoder.embed.weight");
  v.output = config_.tie_output ? v.tgt_embed : matrix("output.weight");
  if (config_.output_bias) v.output_bias = matrix("output.bias");
  if (config_.positions == PositionKind::kLearned) {
    v.src_positions = matrix("encoder.positions.weight");
    v.tgt_positions = matrix("decoder.positions.weight");
  } else {
    sinusoids_ = ops::sinusoidal_positions(config_.max_positions, config_.d_model, dtype, config_.sinusoids).to(device);
  }
  for (std::int64_t i = 0; i < config_.encoder_layers; ++i) {
    const std::string layer = "encoder.layers." + std::to_string(i);
    v.encoder.push_back({bind_attention(p, layer + ".self_attn"), bind_norm(p, layer + ".self_attn_norm"),
                         bind_ffn(p, layer + ".ffn", config_.activation), bind_norm(p, layer + ".ffn_norm")});
  }
  for (std::int64_t i = 0; i < config_.decoder_layers; ++i) {
    const std::string layer = "decoder.layers." + std::to_string(i);
    v.decoder.push_back({bind_attention(p, layer + ".self_attn"), bind_attention(p, layer + ".cross_attn"),
                         bind_norm(p, layer + ".self_attn_norm"), bind_norm(p, layer + ".cross_attn_norm"),
                         bind_ffn(p, layer + ".ffn", config_.activation), bind_norm(p, layer + ".ffn_norm")});
  }
  if (config_.norm == NormPlacement::kPre) {
    v.encoder_final = bind_norm(p, "encoder.final_norm");
    v.decoder_final = bind_norm(p, "decoder.final_norm");
  }
  buckets_ = make_gradient_buckets(params_, config_);
}

Transformer::~Transformer() = default;
Transformer::Transformer(Transformer&&) noexcept = default;
Transformer& Transformer::operator=(Transformer&&) noexcept = default;

void Transformer::initialize(std::uint64_t seed, bool zero_residual) {
  if (!zero_residual) return params_.initialize(seed);
  const auto ends_with = [](const std::string& name, const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  params_.initialize(seed, [&](const ParameterSpec& spec) {
    return ends_with(spec.name, ".out_proj.weight") || ends_with(spec.name, ".fc2.weight");
  });
}

// ---- Forward and backward ------------------------------------------------------------------------

LossResult Transformer::forward_loss(const Batch& batch, const ForwardOptions& options,
                                     ForwardActivations& saved) const {
  auto state = std::make_unique<ForwardActivations::State>();
  const LossResult result = run_forward(batch, options, state.get(), nullptr);
  saved.state_ = std::move(state);
  return result;
}

LossResult Transformer::loss(const Batch& batch, const ForwardOptions& options) const {
  return run_forward(batch, options, nullptr, nullptr);
}

Evaluation Transformer::evaluate(const Batch& batch) const {
  Evaluation e;
  e.loss = run_forward(batch, ForwardOptions{}, nullptr, &e);
  return e;
}

// The forward pass. save: where the backward pass's activations go (nullptr: nothing is kept
// beyond this call); evaluation: receives the log-probabilities and the encoder output.
LossResult Transformer::run_forward(const Batch& batch, const ForwardOptions& options, ForwardActivations::State* save,
                                    Evaluation* evaluation) const {
  if (weights_discarded_) throw Error("forward: this model's weights were given up for decoding (translate only)");
  if (!batch.validated_on_device()) batch.validate(config_);  // a GPU batch was, by Batch::to
  if (batch.device() != params_.values().device()) {
    throw Error("forward: the batch is on " + batch.device().str() + ", the model on " +
                params_.values().device().str() + " (Batch::to moves it)");
  }
  const ModelConfig& c = config_;
  const Views& v = *views_;
  if (save != nullptr) {
    save->batch = batch;
    save->encoder.resize(v.encoder.size());
    save->decoder.resize(v.decoder.size());
  }
  DropoutSites sites = options.training ? DropoutSites(options.seed, options.step) : DropoutSites();
  const double embed_scale = c.embedding_scale();
  const auto attention_options = [&](bool causal) {
    ops::AttentionOptions o;
    o.heads = c.heads;
    o.causal = causal;
    const Dropout d = sites.next(c.attention_dropout);
    o.dropout = d.p;
    o.seed = d.seed;
    o.rng_stream = d.rng_stream;
    return o;
  };

  // Encoder.
  const Tensor src_positions = c.positions == PositionKind::kLearned ? v.src_positions.weight : sinusoids_;
  const Dropout src_embed_dropout = sites.next(c.dropout);
  if (save != nullptr) save->src_embed_dropout = src_embed_dropout;
  Tensor x = src_embed_dropout.apply(ops::embedding(batch.src, v.src_embed.weight, src_positions, 0, embed_scale));
  for (std::size_t i = 0; i < v.encoder.size(); ++i) {
    const auto& p = v.encoder[i];
    ForwardActivations::State::EncoderLayer* a = save != nullptr ? &save->encoder[i] : nullptr;
    x = model::residual_forward(c.norm, p.self_attn_norm, c.layer_norm_eps, x, sites.next(c.dropout),
                                a != nullptr ? &a->attn_residual : nullptr, [&](const Tensor& in) {
                                  return model::attention_forward(p.self_attn, in, in, batch.src_lengths,
                                                                  attention_options(false),
                                                                  a != nullptr ? &a->attn : nullptr);
                                });
    x = model::residual_forward(c.norm, p.ffn_norm, c.layer_norm_eps, x, sites.next(c.dropout),
                                a != nullptr ? &a->ffn_residual : nullptr, [&](const Tensor& in) {
                                  return model::feed_forward_forward(p.ffn, in, sites.next(c.relu_dropout),
                                                                     a != nullptr ? &a->ffn : nullptr);
                                });
  }
  if (c.norm == NormPlacement::kPre) {
    if (save != nullptr) save->encoder_last = x;
    x = ops::layer_norm(x, v.encoder_final.weight, v.encoder_final.bias, c.layer_norm_eps,
                        save != nullptr ? &save->encoder_final : nullptr);
  }
  const Tensor memory = x;  // [B, S, D]
  if (save != nullptr) save->encoder_output = memory;
  if (evaluation != nullptr) evaluation->encoder_output = memory;

  // Decoder.
  const Tensor tgt_positions = c.positions == PositionKind::kLearned ? v.tgt_positions.weight : sinusoids_;
  const Dropout tgt_embed_dropout = sites.next(c.dropout);
  if (save != nullptr) save->tgt_embed_dropout = tgt_embed_dropout;
  Tensor y = tgt_embed_dropout.apply(ops::embedding(batch.tgt_in, v.tgt_embed.weight, tgt_positions, 0, embed_scale));
  for (std::size_t i = 0; i < v.decoder.size(); ++i) {
    const auto& p = v.decoder[i];
    ForwardActivations::State::DecoderLayer* a = save != nullptr ? &save->decoder[i] : nullptr;
    y = model::residual_forward(c.norm, p.self_attn_norm, c.layer_norm_eps, y, sites.next(c.dropout),
                                a != nullptr ? &a->self_residual : nullptr, [&](const Tensor& in) {
                                  return model::attention_forward(p.self_attn, in, in, batch.tgt_lengths,
                                                                  attention_options(true),
                                                                  a != nullptr ? &a->self_attn : nullptr);
                                });
    y = model::residual_forward(c.norm, p.cross_attn_norm, c.layer_norm_eps, y, sites.next(c.dropout),
                                a != nullptr ? &a->cross_residual : nullptr, [&](const Tensor& in) {
                                  return model::attention_forward(p.cross_attn, in, memory, batch.src_lengths,
                                                                  attention_options(false),
                                                                  a != nullptr ? &a->cross_attn : nullptr);
                                });
    y = model::residual_forward(c.norm, p.ffn_norm, c.layer_norm_eps, y, sites.next(c.dropout),
                                a != nullptr ? &a->ffn_residual : nullptr, [&](const Tensor& in) {
                                  return model::feed_forward_forward(p.ffn, in, sites.next(c.relu_dropout),
                                                                     a != nullptr ? &a->ffn : nullptr);
                                });
  }
  if (c.norm == NormPlacement::kPre) {
    if (save != nullptr) save->decoder_last = y;
    y = ops::layer_norm(y, v.decoder_final.weight, v.decoder_final.bias, c.layer_norm_eps,
                        save != nullptr ? &save->decoder_final : nullptr);
  }
  if (save != nullptr) save->decoder_output = y;

  // Output projection and loss.
  const std::int64_t rows = batch.tgt_out.numel();
  Tensor logits = (decoding_output_.weight.defined() ? model::apply(decoding_output_, y)
                                                     : ops::linear(y, v.output.weight, v.output_bias.weight))
                      .view({rows, c.tgt_vocab_size});  // [B*T, V]
  // Training: the loss fused with its gradient (logits become dlogits); otherwise log-probabilities.
  // The sums go into the caller's accumulator when given (not read back), else come back here.
  const Tensor targets = batch.tgt_out.view({rows});
  constexpr double kNotRead = std::numeric_limits<double>::quiet_NaN();
  ops::CrossEntropySums sums{kNotRead, kNotRead};
  if (options.loss_sums != nullptr && save != nullptr) {
    ops::cross_entropy_fused_(logits, targets, c.pad_id, c.label_smoothing, *options.loss_sums, options.dlogits_scale);
  } else if (options.loss_sums != nullptr) {
    ops::cross_entropy_(logits, targets, c.pad_id, c.label_smoothing, *options.loss_sums);
  } else if (save != nullptr) {
    sums = ops::cross_entropy_fused_(logits, targets, c.pad_id, c.label_smoothing, options.dlogits_scale);
  } else {
    sums = ops::cross_entropy_(logits, targets, c.pad_id, c.label_smoothing);
  }
  if (save != nullptr) {
    save->dlogits = logits;
    save->dlogits_scale = options.dlogits_scale;
  }
  if (evaluation != nullptr) {
    evaluation->log_probs = logits.view({batch.tgt_out.dim(0), batch.tgt_out.dim(1), c.tgt_vocab_size});
  }
  return {sums.loss, sums.nll, batch.target_tokens()};
}

void Transformer::backward(ForwardActivations&& saved, double grad_scale, const GradientReady& ready) {
  if (!saved.state_) {
    throw Error("backward: these activations are empty (each forward_loss allows one backward pass)");
  }
  if (!params_.grads().defined()) throw Error("backward: this model has no gradients (it was loaded for decoding)");
  const std::unique_ptr<ForwardActivations::State> act = std::move(saved.state_);
  const ModelConfig& c = config_;
  Views& v = *views_;  // the gradient views are written
  const Batch& batch = act->batch;
  const double embed_scale = c.embedding_scale();

  // Loss and output projection.
  Tensor dlogits = act->dlogits;  // [B*T, V], times act->dlogits_scale
  if (grad_scale != act->dlogits_scale) {
    if (act->dlogits_scale != 1.0) {
      throw Error("backward: the forward pass scaled the loss's gradient by " + std::to_string(act->dlogits_scale) +
                  " (ForwardOptions::dlogits_scale), backward was given " + std::to_string(grad_scale));
    }
    ops::scale_(dlogits, grad_scale);
  }
  Tensor dy = ops::linear_backward(act->decoder_output, v.output.weight,
                                   dlogits.view({batch.tgt_out.dim(0), batch.tgt_out.dim(1), c.tgt_vocab_size}),
                                   v.output.dweight, v.output_bias.dweight);  // [B, T, D] (no bias: undefined)
  if (c.norm == NormPlacement::kPre) {
    dy = ops::layer_norm_backward(dy, act->decoder_last, v.decoder_final.weight, act->decoder_final,
                                  v.decoder_final.dweight, v.decoder_final.dbias);
  }

  // Decoder, last layer first; the encoder output's gradient [B, S, D] is summed over the
  // cross-attentions (the last layer's assigns it, the others' products add to it).
  Tensor dmemory;
  for (std::size_t i = v.decoder.size(); i-- > 0;) {
    auto& p = v.decoder[i];
    const auto& a = act->decoder[i];
    dy = model::residual_backward(c.norm, p.ffn_norm, a.ffn_residual, dy, [&](const Tensor& d, Tensor& dx) {
      model::feed_forward_backward(p.ffn, a.ffn, d, dx);
    });
    dy = model::residual_backward(c.norm, p.cross_attn_norm, a.cross_residual, dy, [&](const Tensor& d, Tensor& dx) {
      model::attention_backward(p.cross_attn, a.cross_attn, d, dx, dmemory);
    });
    dy = model::residual_backward(c.norm, p.self_attn_norm, a.self_residual, dy, [&](const Tensor& d, Tensor& dx) {
      model::attention_backward(p.self_attn, a.self_attn, d, dx, dx);
    });
    if (ready) ready(buckets_[v.decoder.size() - 1 - i]);
  }
  // Sinusoidal positions have no parameters: tgt_positions.dweight is then undefined.
  // <pad> as an input is a constant (nn.Embedding's padding_idx): padded positions give nothing
  // anyway, and a model that starts decoding from <pad> (Marian's) keeps that start's embedding.
  ops::embedding_backward(batch.tgt_in, act->tgt_embed_dropout.apply(dy), v.tgt_embed.dweight, v.tgt_positions.dweight,
                          0, embed_scale, c.pad_id);

  // Encoder.
  Tensor dx = dmemory;  // (defined: ModelConfig requires a decoder layer)
  if (c.norm == NormPlacement::kPre) {
    dx = ops::layer_norm_backward(dx, act->encoder_last, v.encoder_final.weight, act->encoder_final,
                                  v.encoder_final.dweight, v.encoder_final.dbias);
  }
  for (std::size_t i = v.encoder.size(); i-- > 0;) {
    auto& p = v.encoder[i];
    const auto& a = act->encoder[i];
    dx = model::residual_backward(c.norm, p.ffn_norm, a.ffn_residual, dx, [&](const Tensor& d, Tensor& dinput) {
      model::feed_forward_backward(p.ffn, a.ffn, d, dinput);
    });
    dx = model::residual_backward(c.norm, p.self_attn_norm, a.attn_residual, dx, [&](const Tensor& d, Tensor& dinput) {
      model::attention_backward(p.self_attn, a.attn, d, dinput, dinput);
    });
    if (ready) ready(buckets_[v.decoder.size() + v.encoder.size() - 1 - i]);
  }
  ops::embedding_backward(batch.src, act->src_embed_dropout.apply(dx), v.src_embed.dweight, v.src_positions.dweight, 0,
                          embed_scale, c.pad_id);
  if (ready) {
    for (std::size_t b = v.decoder.size() + v.encoder.size(); b < buckets_.size(); ++b) ready(buckets_[b]);
  }
}

}  // namespace dragoman::model
