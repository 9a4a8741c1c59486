// ModelConfig: the Transformer's hyper-parameters, enough to express the paper's base and big
// models and every Table 3 variation (docs/MODEL.md lists each field). Stored as JSON in every
// checkpoint; parsing refuses unknown keys and wrong types, validate() refuses impossible models.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "ops/sinusoid_layout.h"

namespace dragoman::model {

enum class PositionKind { kSinusoidal, kLearned };
enum class NormPlacement { kPost, kPre };
enum class Activation { kRelu, kSwish };  // the feed-forward layer's: max(x, 0) or x * sigmoid(x)

// The most positions a model may have (ModelConfig::validate): its sinusoid table is sized by it.
inline constexpr std::int64_t kMaxPositionsLimit = 65536;

struct ModelConfig {
  std::int64_t encoder_layers = 6;
  std::int64_t decoder_layers = 6;
  std::int64_t d_model = 512;
  std::int64_t d_ff = 2048;
  std::int64_t heads = 8;
  std::int64_t d_k = 0;  // 0: d_model / heads
  std::int64_t d_v = 0;  // 0: d_model / heads
  double dropout = 0.1;
  double attention_dropout = 0.0;
  double relu_dropout = 0.0;
  double label_smoothing = 0.1;
  PositionKind positions = PositionKind::kSinusoidal;
  ops::SinusoidLayout sinusoids = ops::SinusoidLayout::kInterleaved;
  std::int64_t max_positions = 1024;
  bool scale_embeddings = true;  // token embeddings times sqrt(d_model)
  Activation activation = Activation::kRelu;
  bool output_bias = false;  // the output projection has a bias (output.bias; Marian's logits bias)
  bool share_embeddings = true;
  bool tie_output = true;
  NormPlacement norm = NormPlacement::kPost;
  double layer_norm_eps = 1e-5;
  std::int64_t src_vocab_size = 0;
  std::int64_t tgt_vocab_size = 0;
  std::int32_t pad_id = 0;
  std::int32_t bos_id = 2;  // the decoder's start token (its first input, never generated); may be pad_id
  std::int32_t eos_id = 3;

  // The paper's models (Table 3 "base" and "big"), vocabulary sizes left 0 for the data to set.
  static ModelConfig transformer_base();
  static ModelConfig transformer_big();

  std::int64_t key_size() const { return d_k > 0 ? d_k : d_model / heads; }    // K
  std::int64_t value_size() const { return d_v > 0 ? d_v : d_model / heads; }  // Kv
  // The token embeddings' factor: sqrt(d_model), or 1 without scale_embeddings.
  double embedding_scale() const;

  // Throws dragoman::Error naming the first invalid field and why.
  void validate() const;

  nlohmann::json to_json() const;
  // Every key is optional (defaults above); an unknown key or a wrong type is an error naming the key
  // and `source` (a file name). The result is validated unless `validate` is false (a training config
  // whose vocabulary sizes come from the vocabulary later).
  static ModelConfig from_json(const nlohmann::json& json, const std::string& source, bool validate = true);

  friend bool operator==(const ModelConfig& a, const ModelConfig& b);
  friend bool operator!=(const ModelConfig& a, const ModelConfig& b) { return !(a == b); }
};

}  // namespace dragoman::model
