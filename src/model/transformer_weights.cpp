// The Transformer's decoding weights (see transformer.h): int8 quantization, packing (stacked
// q/k/v and k/v products), and giving back the pages of f32 weights that decoding no longer reads.
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "core/allocator.h"
#include "model/transformer.h"
#include "model/transformer_views.h"
#include "ops/gather.h"
#include "ops/linear.h"

namespace dragoman::model {

using model::AttentionParams;
using model::Linear;

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
    // 7-bit weights where oneDNN's int8 products would saturate (ops::quantize_weights).
    ops::QuantizedWeights q = ops::quantize_weights(p.weight);
    p.qweight = std::move(q.qweight);
    p.qscale = std::move(q.scales);
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
  decoding_output_.bias = views_->output_bias.weight;
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

// Rows `rows` of `table` ([N, ...] or [N], contiguous), in that order, on its device.
Tensor gather_rows(const Tensor& table, const std::vector<std::int32_t>& rows) {
  if (!table.is_contiguous()) throw Error("restrict_output: the output layer's rows must be contiguous");
  const std::int64_t width = table.numel() / table.dim(0);
  const auto bytes = width * static_cast<std::int64_t>(dtype_size(table.dtype()));
  const auto n = static_cast<std::int64_t>(rows.size());
  Tensor out = Tensor::empty({n, width}, table.dtype(), table.device());
  ops::gather_row_prefixes(table, bytes, out, bytes, rows, bytes);
  return table.rank() == 1 ? out.view({n}) : out;
}

}  // namespace

void Transformer::keep_output_rows() {
  if (packed_) throw Error("keep_output_rows: it comes before pack_weights");
  keep_output_rows_ = true;
}

std::shared_ptr<const Linear> Transformer::restrict_output(const std::vector<std::int32_t>& pieces) const {
  if (packed_ && !keep_output_rows_) throw Error("restrict_output: keep_output_rows comes before pack_weights");
  if (pieces.empty()) throw Error("restrict_output: no pieces");
  for (const std::int32_t piece : pieces) {
    if (piece < 0 || piece >= config_.tgt_vocab_size) {
      throw Error("restrict_output: target piece " + std::to_string(piece) + " is not in [0, " +
                  std::to_string(config_.tgt_vocab_size) + ")");
    }
  }
  auto out = std::make_shared<Linear>();
  if (views_->output_bias.weight.defined()) out->bias = gather_rows(views_->output_bias.weight, pieces);
  if (decoding_output_.qweight.defined()) {  // int8: its rows and their scales
    out->qweight = gather_rows(decoding_output_.qweight, pieces);
    out->qscale = gather_rows(decoding_output_.qscale, pieces);
  } else {
    out->weight = gather_rows(views_->output.weight, pieces);
  }
  if (packed_) {
    out->packed = ops::pack_weights(out->qweight.defined() ? out->qweight : out->weight);
    if (out->packed) out->qweight = Tensor();
  }
  return out;
}

std::size_t Transformer::pack_weights() {
  require_cpu_decoding("pack_weights");
  if (packed_) return packed_bytes_;
  const auto pack = [this](Linear& p) {
    p.packed = ops::pack_weights(p.qweight.defined() ? p.qweight : p.weight);
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
  if (!decoding_output_.weight.defined()) {
    decoding_output_.weight = views_->output.weight;
    decoding_output_.bias = views_->output_bias.weight;
  }
  const Tensor output_rows = decoding_output_.qweight;  // int8: what restrict_output gathers from
  pack(decoding_output_);
  if (keep_output_rows_) decoding_output_.qweight = output_rows;
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
      output.raw_data() != views_->src_embed.weight.raw_data() &&
      !(keep_output_rows_ && !decoding_output_.qweight.defined())) {  // restrict_output reads f32 rows
    discard_unread(decoding_output_);
  }
  weights_discarded_ = true;
  return bytes;
}

}  // namespace dragoman::model
