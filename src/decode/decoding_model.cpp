// One model or an ensemble as beam search's decoder (see decoding_model.h).
#include "decode/decoding_model.h"

#include <algorithm>

#include "base/error.h"
#include "ops/elementwise.h"

namespace dragoman::decode {
namespace {

// Starts `model`'s decoder state over the batch's sources, recording `attention` when given.
model::DecoderState start_one(const model::Transformer& model, const model::Batch& batch, std::int64_t capacity,
                              std::int64_t beams, const AttentionChoice* attention) {
  const Tensor memory = model.encode(batch.src, batch.src_lengths);
  model::DecoderState state = model.start_decoding(memory, batch.src_lengths, capacity, beams);
  if (attention != nullptr) {
    const model::ModelConfig& c = model.config();
    state.attention_layer = attention_layer(*attention, c.decoder_layers, c.heads);
    state.attention_head = attention->head;
  }
  return state;
}

}  // namespace

std::int64_t attention_layer(const AttentionChoice& choice, std::int64_t layers, std::int64_t heads) {
  if (choice.layer < -1 || choice.layer >= layers) {
    throw Error("attention: layer " + std::to_string(choice.layer + 1) + " of a decoder of " + std::to_string(layers) +
                " layers");
  }
  if (choice.head < -1 || choice.head >= heads) {
    throw Error("attention: head " + std::to_string(choice.head + 1) + " of " + std::to_string(heads) + " heads");
  }
  return choice.layer < 0 ? layers - 1 : choice.layer;
}

Device TransformerDecoding::device() const { return model_.parameters().values().device(); }

DecodingState TransformerDecoding::start(const model::Batch& batch, std::int64_t capacity, std::int64_t beams,
                                         const AttentionChoice* attention) const {
  DecodingState state;
  state.models.push_back(start_one(model_, batch, capacity, beams, attention));
  return state;
}

Tensor TransformerDecoding::step(DecodingState& state, const Tensor& tokens) const {
  model::DecoderState& one = state.models.front();
  Tensor log_probs = model_.decode_step(one, tokens);
  state.attention = one.attention;
  return log_probs;
}

void TransformerDecoding::select_rows(DecodingState& state, const std::vector<std::int64_t>& rows,
                                      bool same_sources) const {
  model_.select_rows(state.models.front(), rows, same_sources);
}

void TransformerDecoding::append(DecodingState& state, DecodingState more) const {
  if (state.models.empty()) {
    state = std::move(more);
    return;
  }
  model_.append_decoding(state.models.front(), std::move(more.models.front()));
  state.attention = Tensor();
}

void TransformerDecoding::restrict_output(DecodingState& state, const std::vector<std::int32_t>& pieces) const {
  state.models.front().output = model_.restrict_output(pieces);
}

bool TransformerDecoding::output_restrictable() const { return model_.output_restrictable(); }

EnsembleDecoding::EnsembleDecoding(std::vector<const model::Transformer*> models, std::vector<std::string> names)
    : models_(std::move(models)) {
  if (models_.empty()) throw Error("ensemble: no models");
  if (names.size() != models_.size()) throw Error("ensemble: one name per model");
  config_ = models_.front()->config();
  const Device device = models_.front()->parameters().values().device();
  for (std::size_t i = 1; i < models_.size(); ++i) {
    const model::ModelConfig& c = models_[i]->config();
    const auto refuse = [&](const std::string& what) {
      throw Error("ensemble: " + names.front() + " and " + names[i] + " differ in " + what +
                  ": the models of an ensemble must share one vocabulary");
    };
    if (c.src_vocab_size != config_.src_vocab_size || c.tgt_vocab_size != config_.tgt_vocab_size) {
      refuse("vocabulary size (" + std::to_string(config_.src_vocab_size) + "/" +
             std::to_string(config_.tgt_vocab_size) + " against " + std::to_string(c.src_vocab_size) + "/" +
             std::to_string(c.tgt_vocab_size) + " source/target pieces)");
    }
    if (c.pad_id != config_.pad_id || c.bos_id != config_.bos_id || c.eos_id != config_.eos_id) {
      refuse("special ids (pad, bos, eos)");
    }
    if (models_[i]->parameters().values().device() != device) {
      throw Error("ensemble: " + names.front() + " and " + names[i] + " are on different devices");
    }
    config_.max_positions = std::min(config_.max_positions, c.max_positions);
  }
}

Device EnsembleDecoding::device() const { return models_.front()->parameters().values().device(); }

DecodingState EnsembleDecoding::start(const model::Batch& batch, std::int64_t capacity, std::int64_t beams,
                                      const AttentionChoice* attention) const {
  DecodingState state;
  for (const model::Transformer* model : models_)
    state.models.push_back(start_one(*model, batch, capacity, beams, attention));
  return state;
}

Tensor EnsembleDecoding::step(DecodingState& state, const Tensor& tokens) const {
  // The sum in model order, then divided by the count: x + x is exact, and so is halving it.
  Tensor sum;
  Tensor attention;
  for (std::size_t i = 0; i < models_.size(); ++i) {
    Tensor log_probs = models_[i]->decode_step(state.models[i], tokens);
    if (i == 0) {
      sum = log_probs;
    } else {
      ops::add_(sum, log_probs);
    }
    const Tensor& a = state.models[i].attention;
    if (!a.defined()) continue;
    if (i == 0) {
      attention = a.clone();
    } else {
      float* to = attention.data<float>();
      const float* from = a.data<float>();
      for (std::int64_t j = 0; j < attention.numel(); ++j) to[j] += from[j];
    }
  }
  const double models = static_cast<double>(models_.size());
  if (models_.size() > 1) ops::scale_(sum, 1.0 / models);
  if (attention.defined() && models_.size() > 1) {
    float* a = attention.data<float>();
    for (std::int64_t j = 0; j < attention.numel(); ++j) a[j] = static_cast<float>(a[j] / models);
  }
  state.attention = attention;
  return sum;
}

void EnsembleDecoding::select_rows(DecodingState& state, const std::vector<std::int64_t>& rows,
                                   bool same_sources) const {
  for (std::size_t i = 0; i < models_.size(); ++i) models_[i]->select_rows(state.models[i], rows, same_sources);
}

void EnsembleDecoding::append(DecodingState& state, DecodingState more) const {
  if (state.models.empty()) {
    state = std::move(more);
    return;
  }
  for (std::size_t i = 0; i < models_.size(); ++i) {
    models_[i]->append_decoding(state.models[i], std::move(more.models[i]));
  }
  state.attention = Tensor();
}

void EnsembleDecoding::restrict_output(DecodingState& state, const std::vector<std::int32_t>& pieces) const {
  for (std::size_t i = 0; i < models_.size(); ++i) state.models[i].output = models_[i]->restrict_output(pieces);
}

bool EnsembleDecoding::output_restrictable() const {
  return std::all_of(models_.begin(), models_.end(),
                     [](const model::Transformer* model) { return model->output_restrictable(); });
}

}  // namespace dragoman::decode
