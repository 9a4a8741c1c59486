// ModelConfig (see config.h).
#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace dragoman::model {

namespace {
constexpr const char* kSinusoidNames[] = {"interleaved", "concatenated", "tensor2tensor"};
}  // namespace

ModelConfig ModelConfig::transformer_base() { return ModelConfig(); }

ModelConfig ModelConfig::transformer_big() {
  ModelConfig c;
  c.d_model = 1024;
  c.d_ff = 4096;
  c.heads = 16;
  c.dropout = 0.3;
  return c;
}

double ModelConfig::embedding_scale() const { return scale_embeddings ? std::sqrt(static_cast<double>(d_model)) : 1.0; }

void ModelConfig::validate() const {
  const auto fail = [](const std::string& what) { throw Error("invalid model config: " + what); };
  const auto positive = [&](const char* name, std::int64_t value) {
    if (value < 1) fail(std::string(name) + " must be >= 1, got " + std::to_string(value));
  };
  const auto probability = [&](const char* name, double value) {
    if (!(value >= 0 && value < 1)) fail(std::string(name) + " must be in [0, 1), got " + std::to_string(value));
  };
  positive("encoder_layers", encoder_layers);
  positive("decoder_layers", decoder_layers);
  positive("d_model", d_model);
  positive("d_ff", d_ff);
  positive("heads", heads);
  positive("max_positions", max_positions);
  // The sinusoid table (max_positions x d_model) is sized by the config alone, not by the file's
  // tensors: a damaged config asking for 10^8 positions would allocate gigabytes before anything
  // else could refuse it. Real models use 512 to 1024 (a 64k-token sentence is not one).
  if (max_positions > kMaxPositionsLimit) {
    fail("max_positions must be <= " + std::to_string(kMaxPositionsLimit) + ", got " + std::to_string(max_positions));
  }
  if (d_k < 0 || d_v < 0) fail("d_k and d_v must be >= 0 (0 means d_model / heads)");
  if ((d_k == 0 || d_v == 0) && d_model % heads != 0) {
    fail("d_model " + std::to_string(d_model) + " is not divisible by heads " + std::to_string(heads) +
         "; set d_k and d_v explicitly");
  }
  probability("dropout", dropout);
  probability("attention_dropout", attention_dropout);
  probability("relu_dropout", relu_dropout);
  probability("label_smoothing", label_smoothing);
  if (positions == PositionKind::kSinusoidal && d_model % 2 != 0) {
    fail("sinusoidal positions need an even d_model, got " + std::to_string(d_model));
  }
  if (positions == PositionKind::kSinusoidal && sinusoids == ops::SinusoidLayout::kTensor2Tensor && d_model < 4) {
    fail("tensor2tensor sinusoids need d_model >= 4, got " + std::to_string(d_model));
  }
  if (!(layer_norm_eps > 0)) fail("layer_norm_eps must be > 0");
  if (src_vocab_size < 4 || tgt_vocab_size < 4) {
    fail("src_vocab_size and tgt_vocab_size must be >= 4 (pad, unk, bos, eos), got " + std::to_string(src_vocab_size) +
         " and " + std::to_string(tgt_vocab_size));
  }
  if (share_embeddings && src_vocab_size != tgt_vocab_size) {
    fail("share_embeddings needs one vocabulary, but src_vocab_size is " + std::to_string(src_vocab_size) +
         " and tgt_vocab_size is " + std::to_string(tgt_vocab_size));
  }
  const std::int64_t smallest = std::min(src_vocab_size, tgt_vocab_size);
  for (const auto& [name, id] :
       {std::pair{"pad_id", pad_id}, std::pair{"bos_id", bos_id}, std::pair{"eos_id", eos_id}}) {
    if (id < 0 || id >= smallest) fail(std::string(name) + " " + std::to_string(id) + " is outside the vocabulary");
  }
  if (pad_id == eos_id || bos_id == eos_id) fail("eos_id must differ from pad_id and bos_id");
}

nlohmann::json ModelConfig::to_json() const {
  return {{"encoder_layers", encoder_layers},
          {"decoder_layers", decoder_layers},
          {"d_model", d_model},
          {"d_ff", d_ff},
          {"heads", heads},
          {"d_k", d_k},
          {"d_v", d_v},
          {"dropout", dropout},
          {"attention_dropout", attention_dropout},
          {"relu_dropout", relu_dropout},
          {"label_smoothing", label_smoothing},
          {"positions", positions == PositionKind::kSinusoidal ? "sinusoidal" : "learned"},
          {"sinusoids", kSinusoidNames[static_cast<int>(sinusoids)]},
          {"max_positions", max_positions},
          {"scale_embeddings", scale_embeddings},
          {"activation", activation == Activation::kRelu ? "relu" : "swish"},
          {"output_bias", output_bias},
          {"share_embeddings", share_embeddings},
          {"tie_output", tie_output},
          {"norm", norm == NormPlacement::kPost ? "post" : "pre"},
          {"layer_norm_eps", layer_norm_eps},
          {"src_vocab_size", src_vocab_size},
          {"tgt_vocab_size", tgt_vocab_size},
          {"pad_id", pad_id},
          {"bos_id", bos_id},
          {"eos_id", eos_id}};
}

ModelConfig ModelConfig::from_json(const nlohmann::json& json, const std::string& source, bool validate) {
  if (!json.is_object()) throw Error(source + ": model config must be a JSON object");
  ModelConfig c;
  for (const auto& item : json.items()) {
    // Named references, not a structured binding: lambdas capture them (C++17, and clang 14).
    const std::string& key = item.key();
    const nlohmann::json& value = item.value();
    const auto wrong = [&](const char* expected) {
      throw Error(source + ": model config key '" + key + "' must be " + expected + ", got " + value.dump());
    };
    const auto integer = [&](auto& field) {
      if (!value.is_number_integer()) wrong("an integer");
      field = value.get<std::remove_reference_t<decltype(field)>>();
    };
    const auto number = [&](double& field) {
      if (!value.is_number()) wrong("a number");
      field = value.get<double>();
    };
    const auto boolean = [&](bool& field) {
      if (!value.is_boolean()) wrong("true or false");
      field = value.get<bool>();
    };
    const auto choice = [&](const char* a, const char* b) {
      if (!value.is_string() || (value != a && value != b))
        wrong((std::string("\"") + a + "\" or \"" + b + "\"").c_str());
      return value == a;
    };
    if (key == "encoder_layers")
      integer(c.encoder_layers);
    else if (key == "decoder_layers")
      integer(c.decoder_layers);
    else if (key == "d_model")
      integer(c.d_model);
    else if (key == "d_ff")
      integer(c.d_ff);
    else if (key == "heads")
      integer(c.heads);
    else if (key == "d_k")
      integer(c.d_k);
    else if (key == "d_v")
      integer(c.d_v);
    else if (key == "dropout")
      number(c.dropout);
    else if (key == "attention_dropout")
      number(c.attention_dropout);
    else if (key == "relu_dropout")
      number(c.relu_dropout);
    else if (key == "label_smoothing")
      number(c.label_smoothing);
    else if (key == "positions")
      c.positions = choice("sinusoidal", "learned") ? PositionKind::kSinusoidal : PositionKind::kLearned;
    else if (key == "sinusoids") {
      const auto* name = std::find_if(std::begin(kSinusoidNames), std::end(kSinusoidNames),
                                      [&](const char* n) { return value.is_string() && value == n; });
      if (name == std::end(kSinusoidNames)) wrong("\"interleaved\", \"concatenated\" or \"tensor2tensor\"");
      c.sinusoids = static_cast<ops::SinusoidLayout>(name - std::begin(kSinusoidNames));
    } else if (key == "max_positions")
      integer(c.max_positions);
    else if (key == "scale_embeddings")
      boolean(c.scale_embeddings);
    else if (key == "activation")
      c.activation = choice("relu", "swish") ? Activation::kRelu : Activation::kSwish;
    else if (key == "output_bias")
      boolean(c.output_bias);
    else if (key == "share_embeddings")
      boolean(c.share_embeddings);
    else if (key == "tie_output")
      boolean(c.tie_output);
    else if (key == "norm")
      c.norm = choice("post", "pre") ? NormPlacement::kPost : NormPlacement::kPre;
    else if (key == "layer_norm_eps")
      number(c.layer_norm_eps);
    else if (key == "src_vocab_size")
      integer(c.src_vocab_size);
    else if (key == "tgt_vocab_size")
      integer(c.tgt_vocab_size);
    else if (key == "pad_id")
      integer(c.pad_id);
    else if (key == "bos_id")
      integer(c.bos_id);
    else if (key == "eos_id")
      integer(c.eos_id);
    else
      throw Error(source + ": unknown model config key '" + key + "'");
  }
  if (!validate) return c;
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  return c;
}

bool operator==(const ModelConfig& a, const ModelConfig& b) { return a.to_json() == b.to_json(); }

}  // namespace dragoman::model
