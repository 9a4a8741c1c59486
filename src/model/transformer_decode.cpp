// The Transformer's incremental decoding (see transformer.h): encode, start_decoding, decode_step
// with the key/value caches, and select_rows (beam search's reorders and dropped sentences).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/numeric.h"
#include "kernels/cpu/gather.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/gather.h"
#include "model/transformer.h"
#include "model/transformer_views.h"
#include "ops/attention.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/linear.h"

namespace dragoman {

using model::AttentionParams;
using model::Dropout;

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
      shape[0] = std::max(state.allocated_rows, t.dim(0));
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
  if (cache.device().is_cpu()) {
    cpu::scatter_row_prefixes(values.raw_data(), src_stride, cache.raw_data(), dst_stride, targets.data(), rows,
                              width * element);
    return;
  }
  const Tensor on_device = Tensor::from_vector(targets, {rows}).to(cache.device());
  const cuda::DeviceGuard guard(cache.device().index);
  cuda::scatter_row_prefixes(values.raw_data(), src_stride, cache.raw_data(), dst_stride,
                             on_device.data<std::int32_t>(), rows, width * element,
                             cuda::stream_of(cache.device().index));
}

// The rows of one select_rows call as the gathers take them: as 32-bit indices, and on a GPU
// uploaded once for all the tensors that are gathered with them (not once per cache tensor).
struct RowIndex {
  explicit RowIndex(const std::vector<std::int64_t>& r) : rows(r), index(r.begin(), r.end()) {}
  const Tensor& on(Device device) {
    if (!uploaded.defined() || uploaded.device() != device) {
      uploaded = Tensor::from_vector(index, {static_cast<std::int64_t>(index.size())}).to(device);
    }
    return uploaded;
  }
  const std::vector<std::int64_t>& rows;
  std::vector<std::int32_t> index;
  Tensor uploaded;
};

// Whether `rows` keeps each of the state's `count` rows in place (always so in greedy search, and
// in beam search whenever every beam extends itself): select_rows then has nothing to move.
bool keeps_every_row(const std::vector<std::int64_t>& rows, std::int64_t count) {
  if (static_cast<std::int64_t>(rows.size()) != count) return false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] != static_cast<std::int64_t>(i)) return false;
  }
  return true;
}

// Rows `selection.rows` of x along dimension 0, in order, keeping only the first `length` entries of
// dimension 1 (the rest is left unset: unused cache positions). The result is a view of the first
// rows of a tensor of `allocated_rows` rows, so that the decoder state's tensors keep one size
// while beam search drops finished sentences: the caching allocator then reuses the same blocks
// step after step instead of asking the system for fresh (page-faulting) memory.
//   x: [B, L, ...] -> [rows.size(), L, ...]
Tensor select_batch_rows(const Tensor& x, RowIndex& selection, std::int64_t length, std::int64_t allocated_rows) {
  const std::vector<std::int64_t>& rows = selection.rows;
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
    const std::vector<std::int32_t>& index = selection.index;
    const auto count = static_cast<std::int64_t>(rows.size());
    if (x.device().is_cpu()) {
      cpu::gather_row_prefixes(x.raw_data(), x.strides()[0] * element, out.raw_data(), out.strides()[0] * element,
                               index.data(), count, row_bytes);
    } else {
      const Tensor& on_device = selection.on(x.device());
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

// Rows `rows` of x (CPU) [B, L, D], output row i with its first positions[i] entries of dimension 1
// (the rest unset: never read), as select_batch_rows: the decoder's caches when their rows hold
// different numbers of positions (sources of different lengths, fed different numbers of tokens),
// copied without the longest row's padding.
Tensor select_own_prefixes(const Tensor& x, const std::vector<std::int64_t>& rows,
                           const std::vector<std::int64_t>& positions, std::int64_t allocated_rows) {
  Shape shape = x.shape();
  shape[0] = allocated_rows;
  const auto count = static_cast<std::int64_t>(rows.size());
  Tensor out = Tensor::empty(shape, x.dtype(), x.device()).narrow(0, 0, count);
  if (x.strides()[2] != 1 || x.strides()[1] != x.dim(2)) throw Error("select_rows: the state's rows must be dense");
  const auto element = static_cast<std::int64_t>(dtype_size(x.dtype()));
  const std::vector<std::int32_t> index(rows.begin(), rows.end());
  std::vector<std::int64_t> bytes(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= x.dim(0))
      throw Error("select_rows: row " + std::to_string(rows[i]) + " out of range");
    bytes[i] = std::min(positions[i], x.dim(1)) * x.strides()[1] * element;
  }
  cpu::gather_row_prefixes(x.raw_data(), x.strides()[0] * element, out.raw_data(), out.strides()[0] * element,
                           index.data(), count, bytes.data());
  return out;
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
  Tensor log_probs = (decoding_output_.weight.defined() ? model::apply(decoding_output_, y)
                                                        : ops::linear(y, v.output.weight, v.output_bias.weight))
                         .view({b, c.tgt_vocab_size});  // [B, V]
  // bf16/f16 logits are widened before the softmax: log-probabilities rounded to 16 bits would
  // blur the beam's scores (bf16 keeps 2 to 3 significant digits).
  if (log_probs.dtype() != accumulator_dtype(log_probs.dtype())) log_probs = log_probs.to(DType::kF32);
  ops::log_softmax_(log_probs);
  for (std::int64_t& fed : state.fed) ++fed;
  state.steps = t + 1;
  return log_probs;
}

void Transformer::select_rows(DecoderState& state, const std::vector<std::int64_t>& rows, bool same_sources) const {
  const auto n = static_cast<std::int64_t>(rows.size());
  const std::int64_t beams = state.beams, rows_before = state.batch_size();
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
    if (!keeps_every_row(sources, rows_before / beams)) {
      const std::int64_t allocated_sources = state.allocated_rows / beams;
      RowIndex selection(sources);
      // On the CPU each source's keys and values without its padding (attention reads a source's
      // own length only); elsewhere all of it.
      std::vector<std::int64_t> lengths;
      if (state.src_lengths.device().is_cpu()) {
        const std::int32_t* before = state.src_lengths.data<std::int32_t>();
        for (const std::int64_t source : sources) lengths.push_back(before[source]);
      }
      state.src_lengths = select_batch_rows(state.src_lengths, selection, 1, allocated_sources);
      for (auto* tensors : {&state.cross_k, &state.cross_v}) {
        for (Tensor& t : *tensors) {
          t = lengths.empty() ? select_batch_rows(t, selection, t.dim(1), allocated_sources)
                              : select_own_prefixes(t, sources, lengths, allocated_sources);
        }
      }
      std::vector<std::int64_t> fed;
      for (const std::int64_t source : sources) fed.push_back(state.fed[static_cast<std::size_t>(source)]);
      state.fed = std::move(fed);
      state.steps = state.fed.empty() ? 0 : *std::max_element(state.fed.begin(), state.fed.end());
    }
  }
  if (keeps_every_row(rows, rows_before)) return;
  // Only the positions fed so far hold keys and values: on the CPU each row's own (sources fed
  // different numbers of tokens: a search that sentences joined), elsewhere the most any row has.
  RowIndex selection(rows);
  const bool own_prefixes =
      state.self_k.front().device().is_cpu() &&
      std::any_of(state.fed.begin(), state.fed.end(), [&](std::int64_t f) { return f != state.steps; });
  std::vector<std::int64_t> row_fed;  // of each new row
  if (own_prefixes) {
    for (std::int64_t i = 0; i < n; ++i) row_fed.push_back(state.fed[static_cast<std::size_t>(i / beams)]);
  }
  for (auto* tensors : {&state.self_k, &state.self_v}) {
    for (Tensor& t : *tensors) {
      t = own_prefixes ? select_own_prefixes(t, rows, row_fed, state.allocated_rows)
                       : select_batch_rows(t, selection, state.steps, state.allocated_rows);
    }
  }
}

void Transformer::append_decoding(DecoderState& state, DecoderState more) const {
  if (state.batch_size() == 0) {
    state = std::move(more);
    return;
  }
  if (more.batch_size() == 0) return;
  if (more.beams != state.beams || more.attention_layer != state.attention_layer ||
      more.attention_head != state.attention_head || more.cross_k.size() != state.cross_k.size()) {
    throw Error("append_decoding: the states differ in beams, layers or recorded attention");
  }
  const std::int64_t n1 = state.src_lengths.dim(0), n2 = more.src_lengths.dim(0), n = n1 + n2;
  const std::int64_t r1 = state.batch_size(), r2 = more.batch_size(), rows = r1 + r2;
  const Device device = state.src_lengths.device();
  // [n1 + n2, ...] from the two states' first dimension's entries; along dimension 1 the longer
  // of the two (the sources padded to the longest; the caches' positions allocated). Each part's
  // rows bring their own positions (`used`: one count per row): on the CPU only those are copied
  // (attention reads no others), elsewhere each part's longest, and with `pad` the positions beyond
  // are zeros (source padding, which attention masks; cache positions not fed yet stay unset).
  const bool cpu = device.is_cpu();
  const auto stack = [&](const Tensor& a, const Tensor& b, const std::vector<std::int64_t>& used_a,
                         const std::vector<std::int64_t>& used_b, bool pad) {
    Shape shape = a.shape();
    shape[0] = a.dim(0) + b.dim(0);
    if (a.rank() > 1) shape[1] = std::max(a.dim(1), b.dim(1));
    Tensor out = Tensor::empty(shape, a.dtype(), device);
    const auto put = [&](const Tensor& from, std::int64_t first, const std::vector<std::int64_t>& used) {
      Tensor to = out.narrow(0, first, from.dim(0));
      if (from.rank() == 1) return to.copy_from(from);
      if (cpu) {
        const auto element = static_cast<std::int64_t>(dtype_size(from.dtype()));
        std::vector<std::int32_t> index(static_cast<std::size_t>(from.dim(0)));
        std::vector<std::int64_t> bytes(index.size());
        for (std::size_t r = 0; r < index.size(); ++r) {
          index[r] = static_cast<std::int32_t>(r);
          bytes[r] = used[r] * from.strides()[1] * element;
        }
        cpu::gather_row_prefixes(from.raw_data(), from.strides()[0] * element, to.raw_data(), to.strides()[0] * element,
                                 index.data(), from.dim(0), bytes.data());
        return;
      }
      const std::int64_t longest = used.empty() ? 0 : *std::max_element(used.begin(), used.end());
      if (longest > 0) to.narrow(1, 0, longest).copy_from(from.narrow(1, 0, longest));
      if (pad && longest < shape[1]) to.narrow(1, longest, shape[1] - longest).fill_zero();
    };
    put(a, 0, used_a);
    put(b, a.dim(0), used_b);
    return out;
  };
  // Each part's positions per source (the sources' lengths, on the CPU; else the padded length)
  // and per row (the tokens fed).
  const auto source_positions = [&](const DecoderState& s) {
    const std::int64_t count = s.src_lengths.dim(0);
    std::vector<std::int64_t> positions(static_cast<std::size_t>(count), s.cross_k.front().dim(1));
    if (cpu) {
      const std::int32_t* lengths = s.src_lengths.data<std::int32_t>();
      for (std::int64_t j = 0; j < count; ++j) positions[static_cast<std::size_t>(j)] = lengths[j];
    }
    return positions;
  };
  const auto row_positions = [](const DecoderState& s) {
    std::vector<std::int64_t> positions;
    for (std::int64_t r = 0; r < s.batch_size(); ++r) positions.push_back(s.fed[static_cast<std::size_t>(r / s.beams)]);
    return positions;
  };
  const std::vector<std::int64_t> sources_a = source_positions(state), sources_b = source_positions(more);
  const std::vector<std::int64_t> rows_a = row_positions(state), rows_b = row_positions(more);
  state.src_lengths = stack(state.src_lengths, more.src_lengths, {}, {}, false);
  for (std::size_t i = 0; i < state.cross_k.size(); ++i) {
    state.cross_k[i] = stack(state.cross_k[i], more.cross_k[i], sources_a, sources_b, true);
    state.cross_v[i] = stack(state.cross_v[i], more.cross_v[i], sources_a, sources_b, true);
    state.self_k[i] = stack(state.self_k[i], more.self_k[i], rows_a, rows_b, false);
    state.self_v[i] = stack(state.self_v[i], more.self_v[i], rows_a, rows_b, false);
  }
  state.fed.insert(state.fed.end(), more.fed.begin(), more.fed.end());
  state.steps = std::max(state.steps, more.steps);
  state.capacity = std::max(state.capacity, more.capacity);
  state.allocated_rows = rows;
  state.attention = Tensor();
  if (state.src_lengths.dim(0) != n || state.self_k.front().dim(0) != rows) {
    throw Error("append_decoding: inconsistent state sizes");
  }
}

}  // namespace dragoman
