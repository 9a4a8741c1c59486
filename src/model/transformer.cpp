// The Transformer (see transformer.h and docs/MODEL.md).
#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/error.h"
#include "core/numeric.h"
#include "kernels/cpu/gather.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/gather.h"
#include "model/layers.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/linear.h"

namespace dragoman {

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

// Positions of the self-attention cache that start_decoding allocates (decode_step doubles them).
constexpr std::int64_t kInitialCacheLength = 16;

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

// Named views of every parameter and its gradient.
struct Transformer::Views {
  struct Matrix {
    Tensor weight, dweight;
  };
  struct EncoderLayer {
    AttentionParams self_attn;
    LayerNormParams self_attn_norm;
    FeedForwardParams ffn;
    LayerNormParams ffn_norm;
  };
  struct DecoderLayer {
    AttentionParams self_attn, cross_attn;
    LayerNormParams self_attn_norm, cross_attn_norm;
    FeedForwardParams ffn;
    LayerNormParams ffn_norm;
  };
  Matrix src_embed, tgt_embed, output;  // [Vs, D], [Vt, D], [Vt, D] (may be the same views)
  Matrix src_positions, tgt_positions;  // [P, D] learned positions (undefined when sinusoidal)
  std::vector<EncoderLayer> encoder;
  std::vector<DecoderLayer> decoder;
  LayerNormParams encoder_final, decoder_final;  // pre-norm only
};

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

FeedForwardParams bind_ffn(ParameterSet& p, const std::string& name) {
  return {bind_linear(p, name + ".fc1"), bind_linear(p, name + ".fc2")};
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
  if (config_.positions == PositionKind::kLearned) {
    v.src_positions = matrix("encoder.positions.weight");
    v.tgt_positions = matrix("decoder.positions.weight");
  } else {
    sinusoids_ = ops::sinusoidal_positions(config_.max_positions, config_.d_model, dtype).to(device);
  }
  for (std::int64_t i = 0; i < config_.encoder_layers; ++i) {
    const std::string layer = "encoder.layers." + std::to_string(i);
    v.encoder.push_back({bind_attention(p, layer + ".self_attn"), bind_norm(p, layer + ".self_attn_norm"),
                         bind_ffn(p, layer + ".ffn"), bind_norm(p, layer + ".ffn_norm")});
  }
  for (std::int64_t i = 0; i < config_.decoder_layers; ++i) {
    const std::string layer = "decoder.layers." + std::to_string(i);
    v.decoder.push_back({bind_attention(p, layer + ".self_attn"), bind_attention(p, layer + ".cross_attn"),
                         bind_norm(p, layer + ".self_attn_norm"), bind_norm(p, layer + ".cross_attn_norm"),
                         bind_ffn(p, layer + ".ffn"), bind_norm(p, layer + ".ffn_norm")});
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

void Transformer::initialize(std::uint64_t seed) { params_.initialize(seed); }

void Transformer::require_cpu_decoding(const char* what) const {
  if (dtype() != DType::kF32 || !params_.values().device().is_cpu() || params_.grads().defined()) {
    throw Error(std::string(what) + ": needs an f32 decoding model on the CPU (translate loads one)");
  }
}

void Transformer::quantize_int8() {
  if (quantized_) return;
  require_cpu_decoding("quantize_int8");
  if (packed_) throw Error("quantize_int8: quantize before pack_weights");
  const auto quantize = [](Linear& p) {
    const std::int64_t out = p.weight.dim(0), in = p.weight.dim(1);
    p.qweight = Tensor::empty({out, in}, DType::kI8);
    p.qscale = Tensor::empty({out}, DType::kF32);
    // 7-bit weights where oneDNN's int8 products would saturate (kernels/cpu/quantize.h).
    cpu::quantize_weights(p.weight.contiguous().data<float>(), out, in, p.qweight.data<std::int8_t>(),
                          p.qscale.data<float>());
  };
  const auto attention = [&](AttentionParams& a) {
    for (Linear* p : {&a.q, &a.k, &a.v, &a.out}) quantize(*p);
  };
  for (Views::EncoderLayer& layer : views_->encoder) {
    attention(layer.self_attn);
    quantize(layer.ffn.fc1);
    quantize(layer.ffn.fc2);
  }
  for (Views::DecoderLayer& layer : views_->decoder) {
    attention(layer.self_attn);
    attention(layer.cross_attn);
    quantize(layer.ffn.fc1);
    quantize(layer.ffn.fc2);
  }
  // The (tied) embedding's f32 rows stay for the inputs: the output projection gets an int8 copy.
  decoding_output_.weight = views_->output.weight;
  quantize(decoding_output_);
  quantized_ = true;
}

namespace {

// One layer computing `parts` side by side (the same input): their biases (zeros for a part without
// one) and either their int8 weights and scales (int8 layers: the f32 weights are not needed) or
// their f32 weights, stacked by output rows.
Linear stack_linears(std::initializer_list<Linear*> parts) {
  const Linear& first = **parts.begin();
  const std::int64_t in = first.weight.dim(1);
  std::int64_t out = 0;
  bool bias = false;
  for (const Linear* p : parts) {
    out += p->weight.dim(0);
    bias = bias || p->bias.defined();
  }
  const Device device = first.weight.device();
  const bool int8 = first.qweight.defined();
  Linear stacked;
  if (bias) stacked.bias = Tensor::zeros({out}, first.weight.dtype(), device);
  if (int8) {
    stacked.qweight = Tensor::empty({out, in}, DType::kI8, device);
    stacked.qscale = Tensor::empty({out}, DType::kF32, device);
  } else {
    stacked.weight = Tensor::empty({out, in}, first.weight.dtype(), device);
  }
  std::int64_t row = 0;
  for (const Linear* p : parts) {
    const std::int64_t rows = p->weight.dim(0);
    if (p->bias.defined()) stacked.bias.narrow(0, row, rows).copy_from(p->bias);
    if (int8) {
      stacked.qweight.narrow(0, row, rows).copy_from(p->qweight);
      stacked.qscale.narrow(0, row, rows).copy_from(p->qscale);
    } else {
      stacked.weight.narrow(0, row, rows).copy_from(p->weight);
    }
    row += rows;
  }
  return stacked;
}

}  // namespace

std::size_t Transformer::pack_weights() {
  require_cpu_decoding("pack_weights");
  if (packed_) return packed_bytes_;
  const auto pack = [this](Linear& p) {
    const Tensor& w = p.qweight.defined() ? p.qweight : p.weight;
    const std::int64_t out = w.dim(0), in = w.dim(1);
    p.packed = p.qweight.defined() ? cpu::PackedWeights::pack_s8(p.qweight.data<std::int8_t>(), out, in)
                                   : cpu::PackedWeights::pack_f32(p.weight.contiguous().data<float>(), out, in);
    if (p.packed) {
      packed_bytes_ += p.packed->bytes();
      p.qweight = Tensor();  // int8: the packed copy is what is read (with qscale)
    }
  };
  // Self-attention's q, k and v projections read one input: one stacked product (qkv); cross-
  // attention's k and v read the encoder's output (kv). The layers they replace are not packed,
  // and a stacked layer's f32 weights go once they are packed (only the packed copy is read).
  const auto stacked = [&](std::initializer_list<Linear*> parts) {
    Linear p = stack_linears(parts);
    pack(p);
    if (p.packed) p.weight = Tensor();
    // The parts' int8 copies are not read again (their f32 weights are kept: the model stays
    // usable as it was loaded, at the f32 parts' speed, until discard_unread_weights).
    for (Linear* part : parts) {
      part->qweight = Tensor();
      part->qscale = Tensor();
    }
    return p;
  };
  const auto self_attention = [&](AttentionParams& a) {
    a.qkv = stacked({&a.q, &a.k, &a.v});
    pack(a.out);
  };
  for (Views::EncoderLayer& layer : views_->encoder) {
    self_attention(layer.self_attn);
    pack(layer.ffn.fc1);
    pack(layer.ffn.fc2);
  }
  for (Views::DecoderLayer& layer : views_->decoder) {
    self_attention(layer.self_attn);
    AttentionParams& cross = layer.cross_attn;
    cross.kv = stacked({&cross.k, &cross.v});
    for (Linear* p : {&cross.q, &cross.out, &layer.ffn.fc1, &layer.ffn.fc2}) pack(*p);
  }
  if (!decoding_output_.weight.defined()) decoding_output_.weight = views_->output.weight;
  pack(decoding_output_);
  packed_ = true;
  return packed_bytes_;
}

std::size_t Transformer::discard_unread_weights() {
  if (!packed_) throw Error("discard_unread_weights: pack_weights comes first");
  if (weights_discarded_) return 0;
  std::size_t bytes = 0;
  // A layer's f32 weight is read by decoding only when the layer has neither packed nor int8 weights.
  const auto discard = [&bytes](const Linear& p) {
    bytes += discard_pages(const_cast<void*>(p.weight.raw_data()),
                           static_cast<std::size_t>(p.weight.numel()) * sizeof(float));
  };
  const auto discard_unread = [&](const Linear& p) {
    if (p.packed || p.qweight.defined()) discard(p);
  };
  // pack_weights stacked every self-attention's q, k and v (qkv) and cross-attention's k and v (kv).
  const auto self_attention = [&](const AttentionParams& a) {
    for (const Linear* p : {&a.q, &a.k, &a.v}) discard(*p);
    discard_unread(a.out);
  };
  for (const Views::EncoderLayer& layer : views_->encoder) {
    self_attention(layer.self_attn);
    discard_unread(layer.ffn.fc1);
    discard_unread(layer.ffn.fc2);
  }
  for (const Views::DecoderLayer& layer : views_->decoder) {
    self_attention(layer.self_attn);
    const AttentionParams& cross = layer.cross_attn;
    discard(cross.k);
    discard(cross.v);
    for (const Linear* p : {&cross.q, &cross.out, &layer.ffn.fc1, &layer.ffn.fc2}) discard_unread(*p);
  }
  // The output projection's weight is the target embedding's table when tied: the inputs read it.
  const Tensor& output = views_->output.weight;
  if (output.raw_data() != views_->tgt_embed.weight.raw_data() &&
      output.raw_data() != views_->src_embed.weight.raw_data()) {
    discard_unread(decoding_output_);
  }
  weights_discarded_ = true;
  return bytes;
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
  const double embed_scale = std::sqrt(static_cast<double>(c.d_model));
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
                                                     : ops::linear(y, v.output.weight, Tensor()))
                      .view({rows, c.tgt_vocab_size});  // [B*T, V]
  // Training: the loss fused with its gradient (logits become dlogits); otherwise log-probabilities.
  // The sums go into the caller's accumulator when given (not read back), else come back here.
  const Tensor targets = batch.tgt_out.view({rows});
  constexpr double kNotRead = std::numeric_limits<double>::quiet_NaN();
  ops::CrossEntropySums sums{kNotRead, kNotRead};
  if (options.loss_sums != nullptr && save != nullptr) {
    ops::cross_entropy_fused_(logits, targets, c.pad_id, c.label_smoothing, *options.loss_sums);
  } else if (options.loss_sums != nullptr) {
    ops::cross_entropy_(logits, targets, c.pad_id, c.label_smoothing, *options.loss_sums);
  } else if (save != nullptr) {
    sums = ops::cross_entropy_fused_(logits, targets, c.pad_id, c.label_smoothing);
  } else {
    sums = ops::cross_entropy_(logits, targets, c.pad_id, c.label_smoothing);
  }
  if (save != nullptr) save->dlogits = logits;
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
  const double embed_scale = std::sqrt(static_cast<double>(c.d_model));

  // Loss and output projection.
  Tensor dlogits = act->dlogits;  // [B*T, V], unscaled
  if (grad_scale != 1.0) ops::scale_(dlogits, grad_scale);
  Tensor no_dbias;  // the output projection has no bias
  Tensor dy = ops::linear_backward(act->decoder_output, v.output.weight,
                                   dlogits.view({batch.tgt_out.dim(0), batch.tgt_out.dim(1), c.tgt_vocab_size}),
                                   v.output.dweight, no_dbias);  // [B, T, D]
  if (c.norm == NormPlacement::kPre) {
    dy = ops::layer_norm_backward(dy, act->decoder_last, v.decoder_final.weight, act->decoder_final,
                                  v.decoder_final.dweight, v.decoder_final.dbias);
  }

  // Decoder, last layer first; the encoder output's gradient is summed over the cross-attentions.
  Tensor dmemory = Tensor::zeros(act->encoder_output.shape(), act->encoder_output.dtype(),
                                 act->encoder_output.device());  // [B, S, D]
  for (std::size_t i = v.decoder.size(); i-- > 0;) {
    auto& p = v.decoder[i];
    const auto& a = act->decoder[i];
    dy = model::residual_backward(c.norm, p.ffn_norm, a.ffn_residual, dy,
                                  [&](const Tensor& d) { return model::feed_forward_backward(p.ffn, a.ffn, d); });
    dy = model::residual_backward(c.norm, p.cross_attn_norm, a.cross_residual, dy, [&](const Tensor& d) {
      const model::AttentionInputGrads g = model::attention_backward(p.cross_attn, a.cross_attn, d);
      ops::add_(dmemory, g.dxkv);
      return g.dxq;
    });
    dy = model::residual_backward(c.norm, p.self_attn_norm, a.self_residual, dy, [&](const Tensor& d) {
      model::AttentionInputGrads g = model::attention_backward(p.self_attn, a.self_attn, d);
      ops::add_(g.dxq, g.dxkv);
      return g.dxq;
    });
    if (ready) ready(buckets_[v.decoder.size() - 1 - i]);
  }
  // Sinusoidal positions have no parameters: tgt_positions.dweight is then undefined.
  ops::embedding_backward(batch.tgt_in, act->tgt_embed_dropout.apply(dy), v.tgt_embed.dweight, v.tgt_positions.dweight,
                          0, embed_scale);

  // Encoder.
  Tensor dx = dmemory;
  if (c.norm == NormPlacement::kPre) {
    dx = ops::layer_norm_backward(dx, act->encoder_last, v.encoder_final.weight, act->encoder_final,
                                  v.encoder_final.dweight, v.encoder_final.dbias);
  }
  for (std::size_t i = v.encoder.size(); i-- > 0;) {
    auto& p = v.encoder[i];
    const auto& a = act->encoder[i];
    dx = model::residual_backward(c.norm, p.ffn_norm, a.ffn_residual, dx,
                                  [&](const Tensor& d) { return model::feed_forward_backward(p.ffn, a.ffn, d); });
    dx = model::residual_backward(c.norm, p.self_attn_norm, a.attn_residual, dx, [&](const Tensor& d) {
      model::AttentionInputGrads g = model::attention_backward(p.self_attn, a.attn, d);
      ops::add_(g.dxq, g.dxkv);
      return g.dxq;
    });
    if (ready) ready(buckets_[v.decoder.size() + v.encoder.size() - 1 - i]);
  }
  ops::embedding_backward(batch.src, act->src_embed_dropout.apply(dx), v.src_embed.dweight, v.src_positions.dweight, 0,
                          embed_scale);
  if (ready) {
    for (std::size_t b = v.decoder.size() + v.encoder.size(); b < buckets_.size(); ++b) ready(buckets_[b]);
  }
}

// ---- Incremental decoding ------------------------------------------------------------------------

Tensor Transformer::encode(const Tensor& src, const Tensor& src_lengths) const {
  const ModelConfig& c = config_;
  const Views& v = *views_;
  ops::AttentionOptions options;
  options.heads = c.heads;
  const Tensor positions = c.positions == PositionKind::kLearned ? v.src_positions.weight : sinusoids_;
  Tensor x = ops::embedding(src, v.src_embed.weight, positions, 0, std::sqrt(static_cast<double>(c.d_model)));
  for (const auto& p : v.encoder) {
    x = model::residual_forward(
        c.norm, p.self_attn_norm, c.layer_norm_eps, x, Dropout{}, nullptr,
        [&](const Tensor& in) { return model::attention_forward(p.self_attn, in, in, src_lengths, options, nullptr); });
    x = model::residual_forward(c.norm, p.ffn_norm, c.layer_norm_eps, x, Dropout{}, nullptr, [&](const Tensor& in) {
      return model::feed_forward_forward(p.ffn, in, Dropout{}, nullptr);
    });
  }
  if (c.norm == NormPlacement::kPre) {
    x = ops::layer_norm(x, v.encoder_final.weight, v.encoder_final.bias, c.layer_norm_eps, nullptr);
  }
  return x;  // [B, S, D]
}

DecoderState Transformer::start_decoding(const Tensor& encoder_output, const Tensor& src_lengths, std::int64_t capacity,
                                         std::int64_t beams) const {
  const ModelConfig& c = config_;
  if (capacity < 1 || capacity > c.max_positions) {
    throw Error("start_decoding: capacity " + std::to_string(capacity) + " must be in [1, max_positions " +
                std::to_string(c.max_positions) + "]");
  }
  if (beams < 1) throw Error("start_decoding: beams must be >= 1");
  DecoderState state;
  state.src_lengths = src_lengths;
  state.capacity = capacity;
  state.beams = beams;
  const std::int64_t b = encoder_output.dim(0) * beams;  // rows
  state.allocated_rows = b;
  for (const auto& p : views_->decoder) {
    const AttentionParams& cross = p.cross_attn;
    if (model::is_set(cross.kv)) {
      // pack_weights's stacked k and v: one product.   [B, S, H*K + H*Kv]
      const Tensor kv = model::apply(cross.kv, encoder_output);
      const std::int64_t dk = cross.k.weight.dim(0);
      state.cross_k.push_back(kv.narrow(2, 0, dk).contiguous());
      state.cross_v.push_back(kv.narrow(2, dk, cross.v.weight.dim(0)).contiguous());
    } else {
      state.cross_k.push_back(model::apply(cross.k, encoder_output));  // [B, S, H*K]
      state.cross_v.push_back(model::apply(cross.v, encoder_output));  // [B, S, H*Kv]
    }
    // Most outputs end long before the cap (source length + 50 in the paper): the cache starts
    // small and doubles when full (decode_step).
    const std::int64_t length = std::min<std::int64_t>(capacity, kInitialCacheLength);
    state.self_k.push_back(Tensor::zeros({b, length, c.heads * c.key_size()}, dtype(), encoder_output.device()));
    state.self_v.push_back(Tensor::zeros({b, length, c.heads * c.value_size()}, dtype(), encoder_output.device()));
  }
  return state;
}

namespace {

// Gives the self-attention caches room for `length` positions, keeping the `state.steps` filled
// ones (and the state's allocated row count: select_rows's views of the first rows).
void grow_cache(DecoderState& state, std::int64_t length) {
  for (auto* tensors : {&state.self_k, &state.self_v}) {
    for (Tensor& t : *tensors) {
      Shape shape = t.shape();
      shape[0] = std::max(state.allocated_rows, t.dim(0));
      shape[1] = length;
      Tensor grown = Tensor::empty(shape, t.dtype(), t.device()).narrow(0, 0, t.dim(0));
      if (state.steps > 0) grown.narrow(1, 0, state.steps).copy_from(t.narrow(1, 0, state.steps));
      t = grown;
    }
  }
}

}  // namespace

Tensor Transformer::decode_step(DecoderState& state, const Tensor& tokens) const {
  const ModelConfig& c = config_;
  const Views& v = *views_;
  const std::int64_t b = state.batch_size(), t = state.steps;
  if (t >= state.capacity) throw Error("decode_step: the decoder state is full (" + std::to_string(t) + " tokens)");
  if (t >= state.self_k.front().dim(1)) grow_cache(state, std::min(state.capacity, 2 * t));
  if (tokens.shape() != Shape{b}) throw Error("decode_step: expected " + std::to_string(b) + " tokens");
  const Tensor positions = c.positions == PositionKind::kLearned ? v.tgt_positions.weight : sinusoids_;
  Tensor y = ops::embedding(tokens.view({b, 1}), v.tgt_embed.weight, positions, t,
                            std::sqrt(static_cast<double>(c.d_model)));  // [B, 1, D]
  const Tensor self_lengths =  // on the model's device, like every operand of an op
      Tensor::from_vector(std::vector<std::int32_t>(static_cast<std::size_t>(b), static_cast<std::int32_t>(t + 1)), {b})
          .to(tokens.device());
  ops::AttentionOptions options;
  options.heads = c.heads;
  for (std::size_t i = 0; i < v.decoder.size(); ++i) {
    const auto& p = v.decoder[i];
    y = model::residual_forward(
        c.norm, p.self_attn_norm, c.layer_norm_eps, y, Dropout{}, nullptr, [&](const Tensor& in) {
          const AttentionParams& a = p.self_attn;
          const model::Projections qkv = model::self_attention_projections(a, in);  // [B, 1, ...]
          state.self_k[i].narrow(1, t, 1).copy_from(qkv.k);
          state.self_v[i].narrow(1, t, 1).copy_from(qkv.v);
          const Tensor context = ops::attention(qkv.q, state.self_k[i].narrow(1, 0, t + 1),
                                                state.self_v[i].narrow(1, 0, t + 1), self_lengths, options,
                                                nullptr);  // [B, 1, H*Kv]
          return model::apply(a.out, context);
        });
    y = model::residual_forward(
        c.norm, p.cross_attn_norm, c.layer_norm_eps, y, Dropout{}, nullptr, [&](const Tensor& in) {
          const AttentionParams& a = p.cross_attn;
          // The `beams` rows of a source attend to its keys as `beams`
          // queries of one batch entry: [N, beams, H*K] over [N, S, H*K].
          const std::int64_t n = b / state.beams;
          const Tensor q = model::apply(a.q, in).view({n, state.beams, -1});
          const Tensor context =
              ops::attention(q, state.cross_k[i], state.cross_v[i], state.src_lengths, options, nullptr);
          return model::apply(a.out, context.view({b, 1, -1}));
        });
    y = model::residual_forward(c.norm, p.ffn_norm, c.layer_norm_eps, y, Dropout{}, nullptr, [&](const Tensor& in) {
      return model::feed_forward_forward(p.ffn, in, Dropout{}, nullptr);
    });
  }
  if (c.norm == NormPlacement::kPre) {
    y = ops::layer_norm(y, v.decoder_final.weight, v.decoder_final.bias, c.layer_norm_eps, nullptr);
  }
  Tensor log_probs = (decoding_output_.weight.defined() ? model::apply(decoding_output_, y)
                                                        : ops::linear(y, v.output.weight, Tensor()))
                         .view({b, c.tgt_vocab_size});  // [B, V]
  // bf16/f16 logits are widened before the softmax: log-probabilities rounded to 16 bits would
  // blur the beam's scores (bf16 keeps 2 to 3 significant digits).
  if (log_probs.dtype() != accumulator_dtype(log_probs.dtype())) log_probs = log_probs.to(DType::kF32);
  ops::log_softmax_(log_probs);
  state.steps = t + 1;
  return log_probs;
}

namespace {

// Rows `rows` of x along dimension 0, in order, keeping only the first `length` entries of
// dimension 1 (the rest is left unset: unused cache positions). The result is a view of the first
// rows of a tensor of `allocated_rows` rows, so that the decoder state's tensors keep one size
// while beam search drops finished sentences: the caching allocator then reuses the same blocks
// step after step instead of asking the system for fresh (page-faulting) memory.
//   x: [B, L, ...] -> [rows.size(), L, ...]
Tensor select_batch_rows(const Tensor& x, const std::vector<std::int64_t>& rows, std::int64_t length,
                         std::int64_t allocated_rows) {
  Shape shape = x.shape();
  shape[0] = allocated_rows;
  Tensor out = Tensor::empty(shape, x.dtype(), x.device()).narrow(0, 0, static_cast<std::int64_t>(rows.size()));
  for (const std::int64_t row : rows) {
    if (row < 0 || row >= x.dim(0)) throw Error("select_rows: row " + std::to_string(row) + " out of range");
  }
  // Rows whose kept prefix is one dense block (the caches always are): one gather, on a GPU one
  // kernel for all rows. Anything else: a copy per row.
  bool dense = x.strides().back() == 1 || x.rank() == 1;
  for (std::int64_t d = x.rank() - 2; d >= 1 && dense; --d) dense = x.strides()[d] == x.strides()[d + 1] * x.dim(d + 1);
  if (dense && rows.size() <= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    const auto element = static_cast<std::int64_t>(dtype_size(x.dtype()));
    const std::int64_t row_bytes =
        (x.rank() > 1 ? std::min(length, x.dim(1)) * x.strides()[1] : std::int64_t{1}) * element;
    const std::vector<std::int32_t> index(rows.begin(), rows.end());
    const auto count = static_cast<std::int64_t>(rows.size());
    if (x.device().is_cpu()) {
      cpu::gather_row_prefixes(x.raw_data(), x.strides()[0] * element, out.raw_data(), out.strides()[0] * element,
                               index.data(), count, row_bytes);
    } else {
      const Tensor on_device = Tensor::from_vector(index, {count}).to(x.device());
      const cuda::DeviceGuard guard(x.device().index);
      cuda::gather_row_prefixes(x.raw_data(), x.strides()[0] * element, out.raw_data(), out.strides()[0] * element,
                                on_device.data<std::int32_t>(), count, row_bytes, cuda::stream_of(x.device().index));
    }
    return out;
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    Tensor to = out.narrow(0, static_cast<std::int64_t>(i), 1), from = x.narrow(0, rows[i], 1);
    if (x.rank() > 1 && length < x.dim(1)) {
      if (length == 0) continue;
      to = to.narrow(1, 0, length);
      from = from.narrow(1, 0, length);
    }
    to.copy_from(from);
  }
  return out;
}

}  // namespace

void Transformer::select_rows(DecoderState& state, const std::vector<std::int64_t>& rows, bool same_sources) const {
  const auto n = static_cast<std::int64_t>(rows.size());
  const std::int64_t beams = state.beams;
  state.allocated_rows = std::max(state.allocated_rows, n);
  if (same_sources) {
    if (n != state.batch_size()) throw Error("select_rows: same_sources needs one row per state row");
  } else {
    // The source of each run of `beams` new rows.
    if (n % beams != 0) {
      throw Error("select_rows: " + std::to_string(n) + " rows are not runs of " + std::to_string(beams) + " beams");
    }
    std::vector<std::int64_t> sources;
    for (std::int64_t j = 0; j < n; j += beams) {
      for (std::int64_t k = 0; k < beams; ++k) {
        if (rows[j + k] < 0 || rows[j + k] >= state.batch_size()) {
          throw Error("select_rows: row " + std::to_string(rows[j + k]) + " out of range");
        }
        if (rows[j + k] / beams != rows[j] / beams) {
          throw Error("select_rows: rows " + std::to_string(rows[j]) + " and " + std::to_string(rows[j + k]) +
                      " of one run of beams decode different sources");
        }
      }
      sources.push_back(rows[j] / beams);
    }
    const std::int64_t allocated_sources = state.allocated_rows / beams;
    state.src_lengths = select_batch_rows(state.src_lengths, sources, 1, allocated_sources);
    for (auto* tensors : {&state.cross_k, &state.cross_v}) {
      for (Tensor& t : *tensors) t = select_batch_rows(t, sources, t.dim(1), allocated_sources);
    }
  }
  // Only the positions fed so far hold keys and values.
  for (auto* tensors : {&state.self_k, &state.self_v}) {
    for (Tensor& t : *tensors) t = select_batch_rows(t, rows, state.steps, state.allocated_rows);
  }
}

}  // namespace dragoman
