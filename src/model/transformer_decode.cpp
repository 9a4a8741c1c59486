// The Transformer's incremental decoding (see transformer.h): encode, start_decoding, decode_step
// with the key/value caches (decoder_state.cpp: the state's reorders and joins).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/numeric.h"
#include "model/decoder_rows.h"
#include "model/transformer.h"
#include "model/transformer_views.h"
#include "ops/attention.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/gather.h"
#include "ops/linear.h"

namespace dragoman::model {

using model::AttentionParams;
using model::Dropout;
using model::RowIndex;
using model::select_batch_rows;

namespace {

// Positions of the self-attention cache that start_decoding allocates (decode_step doubles them).
constexpr std::int64_t kInitialCacheLength = 16;

}  // namespace

Tensor Transformer::encode(const Tensor& src, const Tensor& src_lengths) const {
  const ModelConfig& c = config_;
  const Views& v = *views_;
  ops::AttentionOptions options;
  options.heads = c.heads;
  const Tensor positions = c.positions == PositionKind::kLearned ? v.src_positions.weight : sinusoids_;
  Tensor x = ops::embedding(src, v.src_embed.weight, positions, 0, c.embedding_scale());
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
  state.fed.assign(static_cast<std::size_t>(encoder_output.dim(0)), 0);
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
      shape[0] = std::max({state.allocated_rows, t.dim(0), t.capacity(0)});
      shape[1] = length;
      Tensor grown = Tensor::empty(shape, t.dtype(), t.device()).narrow(0, 0, t.dim(0));
      if (state.steps > 0) grown.narrow(1, 0, state.steps).copy_from(t.narrow(1, 0, state.steps));
      t = grown;
    }
  }
}

// state.attention = the cross-attention of layer i's queries q [N, beams, H*K], as f32 [R, S] on
// the CPU: one head's, or the average of all heads (summed in head order, then divided).
void record_attention(DecoderState& state, const Tensor& q, std::size_t i, const ops::AttentionOptions& options) {
  const Tensor probs =
      ops::attention_probabilities(q, state.cross_k[i], state.src_lengths, options);  // [N, H, beams, S]
  const std::int64_t n = probs.dim(0), heads = probs.dim(1), beams = probs.dim(2), s = probs.dim(3);
  if (state.attention_head >= heads) {
    throw Error("decode_step: attention head " + std::to_string(state.attention_head) + " of " + std::to_string(heads));
  }
  state.attention = Tensor::empty({n * beams, s}, DType::kF32, Device::cpu());
  const float* p = probs.data<float>();
  float* out = state.attention.data<float>();
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t k = 0; k < beams; ++k) {
      float* row = out + (b * beams + k) * s;
      const auto head_row = [&](std::int64_t h) { return p + ((b * heads + h) * beams + k) * s; };
      if (state.attention_head >= 0) {
        std::copy(head_row(state.attention_head), head_row(state.attention_head) + s, row);
        continue;
      }
      std::fill(row, row + s, 0.0f);
      for (std::int64_t h = 0; h < heads; ++h) {
        for (std::int64_t j = 0; j < s; ++j) row[j] += head_row(h)[j];
      }
      for (std::int64_t j = 0; j < s; ++j) row[j] /= static_cast<float>(heads);
    }
  }
}

}  // namespace

namespace {

// Where a decoding step's rows are: each row's position (its source's tokens fed), its
// self-attention length (position + 1), and whether all rows are at the state's one position.
struct RowPositions {
  explicit RowPositions(const DecoderState& state) {
    const std::int64_t rows = state.batch_size();
    positions.reserve(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t fed = state.fed[static_cast<std::size_t>(r / state.beams)];
      uniform = uniform && fed == state.steps;
      positions.push_back(fed);
      lengths.push_back(static_cast<std::int32_t>(fed + 1));
    }
  }
  std::vector<std::int64_t> positions;
  std::vector<std::int32_t> lengths;
  bool uniform = true;
};

// cache [R, L, H*K] row r, position positions[r] = values [R, 1, H*K] row r, for every row: one
// scatter over the cache's (row, position) vectors.
void write_at_positions(Tensor& cache, const Tensor& values, const RowPositions& at) {
  const auto element = static_cast<std::int64_t>(dtype_size(cache.dtype()));
  const std::int64_t rows = values.dim(0), width = values.dim(2);
  if (cache.strides()[2] != 1 || values.strides()[2] != 1 || cache.strides()[0] % cache.strides()[1] != 0) {
    throw Error("decode_step: the caches' rows must be contiguous");
  }
  const std::int64_t per_row = cache.strides()[0] / cache.strides()[1];  // (row, position) vectors per row
  std::vector<std::int32_t> targets(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    targets[static_cast<std::size_t>(r)] =
        static_cast<std::int32_t>(r * per_row + at.positions[static_cast<std::size_t>(r)]);
  }
  const std::int64_t src_stride = values.strides()[0] * element, dst_stride = cache.strides()[1] * element;
  ops::scatter_row_prefixes(values, src_stride, cache, dst_stride, targets, width * element);
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
  const double scale = c.embedding_scale();
  // Every source at the same position (translate's batches): one position for all rows. Sources
  // that joined later (append_decoding) are at their own: each row's position, length and cache
  // position.
  const RowPositions at(state);
  Tensor y;
  if (at.uniform) {
    y = ops::embedding(tokens.view({b, 1}), v.tgt_embed.weight, positions, t, scale);  // [B, 1, D]
  } else {
    // Each row's position vector gathered: embedding row r adds row r of [B, D], the same sum.
    RowIndex selection(at.positions);
    const Tensor row_positions = select_batch_rows(positions, selection, positions.dim(1), b);
    y = ops::embedding(tokens.view({1, b}), v.tgt_embed.weight, row_positions, 0, scale).view({b, 1, -1});
  }
  const Tensor self_lengths = Tensor::from_vector(at.lengths, {b}).to(tokens.device());  // on the model's device
  ops::AttentionOptions options;
  options.heads = c.heads;
  for (std::size_t i = 0; i < v.decoder.size(); ++i) {
    const auto& p = v.decoder[i];
    y = model::residual_forward(
        c.norm, p.self_attn_norm, c.layer_norm_eps, y, Dropout{}, nullptr, [&](const Tensor& in) {
          const AttentionParams& a = p.self_attn;
          const model::Projections qkv = model::self_attention_projections(a, in);  // [B, 1, ...]
          if (at.uniform) {
            state.self_k[i].narrow(1, t, 1).copy_from(qkv.k);
            state.self_v[i].narrow(1, t, 1).copy_from(qkv.v);
          } else {
            write_at_positions(state.self_k[i], qkv.k, at);
            write_at_positions(state.self_v[i], qkv.v, at);
          }
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
          if (static_cast<std::int64_t>(i) == state.attention_layer) record_attention(state, q, i, options);
          return model::apply(a.out, context.view({b, 1, -1}));
        });
    y = model::residual_forward(c.norm, p.ffn_norm, c.layer_norm_eps, y, Dropout{}, nullptr, [&](const Tensor& in) {
      return model::feed_forward_forward(p.ffn, in, Dropout{}, nullptr);
    });
  }
  if (c.norm == NormPlacement::kPre) {
    y = ops::layer_norm(y, v.decoder_final.weight, v.decoder_final.bias, c.layer_norm_eps, nullptr);
  }
  Tensor log_probs = (state.output                        ? model::apply(*state.output, y)
                      : decoding_output_.weight.defined() ? model::apply(decoding_output_, y)
                                                          : ops::linear(y, v.output.weight, v.output_bias.weight))
                         .view({b, -1});  // [B, V], or [B, pieces] with a shortlist
  // bf16/f16 logits are widened before the softmax: log-probabilities rounded to 16 bits would
  // blur the beam's scores (bf16 keeps 2 to 3 significant digits).
  if (log_probs.dtype() != accumulator_dtype(log_probs.dtype())) log_probs = log_probs.to(DType::kF32);
  ops::log_softmax_(log_probs);
  for (std::int64_t& fed : state.fed) ++fed;
  state.steps = t + 1;
  return log_probs;
}

}  // namespace dragoman::model
