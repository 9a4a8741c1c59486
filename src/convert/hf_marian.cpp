// Reading Hugging Face MarianMT directories (see hf_marian.h).
#include "convert/hf_marian.h"

#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/read_file.h"
#include "io/safetensors.h"
#include "io/torch_pickle.h"
#include "ops/embedding.h"

namespace dragoman::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& path) {
  const std::vector<char> bytes = io::read_file(path.string());
  return {bytes.begin(), bytes.end()};
}

json read_json(const fs::path& path) {
  const json j = json::parse(read_text(path), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(path.string() + ": not a JSON object");
  return j;
}

// config.json's MarianConfig as a ModelConfig; what it cannot represent is refused by key.
model::ModelConfig model_config(const json& j, const std::string& file) {
  const auto fail = [&](const std::string& what) { throw Error(file + ": " + what); };
  const auto get = [&](const char* key, const json& fallback) -> json {
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? fallback : *it;
  };
  const auto integer = [&](const char* key, const json& fallback = json()) -> std::int64_t {
    const json v = get(key, fallback);
    if (!v.is_number_integer()) fail("'" + std::string(key) + "' must be an integer, got " + v.dump());
    return v.get<std::int64_t>();
  };
  const auto id = [&](const char* key, const json& fallback = json()) -> std::int32_t {
    const std::int64_t v = integer(key, fallback);
    if (v < 0 || v > std::numeric_limits<std::int32_t>::max()) fail("'" + std::string(key) + "' is not a token id");
    return static_cast<std::int32_t>(v);
  };
  const auto number = [&](const char* key, double fallback) -> double {
    const json v = get(key, fallback);
    if (!v.is_number()) fail("'" + std::string(key) + "' must be a number, got " + v.dump());
    return v.get<double>();
  };
  const auto boolean = [&](const char* key, bool fallback) -> bool {
    const json v = get(key, fallback);
    if (!v.is_boolean()) fail("'" + std::string(key) + "' must be true or false, got " + v.dump());
    return v.get<bool>();
  };
  const json type = get("model_type", "");
  if (type != "marian") fail("model_type " + type.dump() + ": only MarianMT models (\"marian\") are converted");
  // Settings of other BART-family models that MarianMT never uses: refused, not ignored.
  for (const char* key : {"normalize_before", "add_final_layer_norm", "normalize_embedding", "layernorm_embedding",
                          "add_bias_logits", "static_position_embeddings"}) {
    const json v = get(key, false);
    if (v != false && !(std::string(key) == "static_position_embeddings" && v == true)) {
      fail("'" + std::string(key) + "' = " + v.dump() + " is not a MarianMT setting Dragoman represents");
    }
  }
  model::ModelConfig c;
  c.encoder_layers = integer("encoder_layers");
  c.decoder_layers = integer("decoder_layers");
  c.d_model = integer("d_model");
  c.heads = integer("encoder_attention_heads");
  if (integer("decoder_attention_heads") != c.heads) {
    fail("'decoder_attention_heads' differs from 'encoder_attention_heads': Dragoman has one head count");
  }
  c.d_ff = integer("encoder_ffn_dim");
  if (integer("decoder_ffn_dim") != c.d_ff) fail("'decoder_ffn_dim' differs from 'encoder_ffn_dim'");
  const json activation = get("activation_function", "gelu");
  if (activation == "relu") {
    c.activation = model::Activation::kRelu;
  } else if (activation == "swish" || activation == "silu") {
    c.activation = model::Activation::kSwish;
  } else {
    fail("'activation_function' " + activation.dump() + ": Dragoman has \"relu\" and \"swish\"");
  }
  c.dropout = number("dropout", 0.1);
  c.attention_dropout = number("attention_dropout", 0.0);
  c.relu_dropout = number("activation_dropout", 0.0);
  c.positions = model::PositionKind::kSinusoidal;
  c.sinusoids = ops::SinusoidLayout::kConcatenated;
  c.max_positions = integer("max_position_embeddings");
  c.scale_embeddings = boolean("scale_embedding", false);
  c.output_bias = true;  // final_logits_bias
  c.norm = model::NormPlacement::kPost;
  c.layer_norm_eps = 1e-5;  // torch.nn.LayerNorm's
  c.src_vocab_size = integer("vocab_size");
  c.tgt_vocab_size = integer("decoder_vocab_size", c.src_vocab_size);
  c.share_embeddings = boolean("share_encoder_decoder_embeddings", true);
  if (c.share_embeddings && c.src_vocab_size != c.tgt_vocab_size) {
    fail("'share_encoder_decoder_embeddings' with 'vocab_size' != 'decoder_vocab_size'");
  }
  c.tie_output = boolean("tie_word_embeddings", true);
  c.pad_id = id("pad_token_id");
  c.eos_id = id("eos_token_id");
  c.bos_id = id("decoder_start_token_id", c.pad_id);
  return c;
}

// vocab.json: piece -> id, every id of [0, n) once.
text::PieceTable piece_table(const fs::path& path, const json& tokenizer, bool source) {
  const json vocab = read_json(path);
  const std::string file = path.string();
  std::vector<std::string> pieces(vocab.size());
  std::vector<bool> seen(vocab.size(), false);
  for (const auto& item : vocab.items()) {
    if (!item.value().is_number_integer()) throw Error(file + ": the id of '" + item.key() + "' is not an integer");
    const std::int64_t id = item.value().get<std::int64_t>();
    if (id < 0 || id >= static_cast<std::int64_t>(pieces.size()) || seen[static_cast<std::size_t>(id)]) {
      throw Error(file + ": the ids must be 0.." + std::to_string(pieces.size() - 1) + ", each once; '" + item.key() +
                  "' has " + std::to_string(id));
    }
    seen[static_cast<std::size_t>(id)] = true;
    pieces[static_cast<std::size_t>(id)] = item.key();
  }
  const auto special = [&](const char* key, const char* fallback) -> std::int32_t {
    const auto it = tokenizer.find(key);
    const std::string piece = it != tokenizer.end() && it->is_string() ? it->get<std::string>() : fallback;
    const auto found = vocab.find(piece);
    if (found == vocab.end()) throw Error(file + ": the " + std::string(key) + " '" + piece + "' is not in it");
    return found->get<std::int32_t>();
  };
  text::PieceTable t;
  t.pieces = std::move(pieces);
  t.unk_id = special("unk_token", "<unk>");
  t.eos_id = special("eos_token", "</s>");
  t.append_eos = source;                                            // MarianTokenizer ends every source with </s>
  t.special = {t.eos_id, t.unk_id, special("pad_token", "<pad>")};  // skip_special_tokens drops these
  return t;
}

// HF's tensor name -> Dragoman's (docs/MODELS.md), or "" for a tensor that is checked and dropped.
std::string dragoman_name(const std::string& name, const model::ModelConfig& c) {
  static const std::map<std::string, std::string> kLayerParts = {{"self_attn.", "self_attn."},
                                                                 {"encoder_attn.", "cross_attn."},
                                                                 {"self_attn_layer_norm.", "self_attn_norm."},
                                                                 {"encoder_attn_layer_norm.", "cross_attn_norm."},
                                                                 {"fc1.", "ffn.fc1."},
                                                                 {"fc2.", "ffn.fc2."},
                                                                 {"final_layer_norm.", "ffn_norm."}};
  for (const char* side : {"encoder", "decoder"}) {
    const std::string prefix = "model." + std::string(side) + ".layers.";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::size_t dot = name.find('.', prefix.size());
    if (dot == std::string::npos) return {};
    const std::string index = name.substr(prefix.size(), dot - prefix.size());
    const std::string rest = name.substr(dot + 1);
    for (const auto& [theirs, ours] : kLayerParts) {
      if (rest.rfind(theirs, 0) == 0)
        return std::string(side) + ".layers." + index + "." + ours + rest.substr(theirs.size());
    }
    return {};
  }
  if (name == "final_logits_bias") return "output.bias";
  if (c.share_embeddings && name == "model.shared.weight") return "embed.weight";
  if (!c.share_embeddings && name == "model.encoder.embed_tokens.weight") return "encoder.embed.weight";
  if (!c.share_embeddings && name == "model.decoder.embed_tokens.weight") return "decoder.embed.weight";
  if (!c.tie_output && name == "lm_head.weight") return "output.weight";
  return {};
}

// Older transformers versions saved the sinusoid tables: they must be the concatenated layout.
void check_positions(const io::SafeTensor& t, const model::ModelConfig& c, const std::string& file) {
  if (t.dtype != DType::kF32 || t.shape != std::vector<std::int64_t>{c.max_positions, c.d_model}) {
    throw Error(file + ": '" + t.name + "' is not an F32 [max_position_embeddings, d_model] table");
  }
  const Tensor table =
      ops::sinusoidal_positions(c.max_positions, c.d_model, DType::kF64, ops::SinusoidLayout::kConcatenated);
  const double* expected = table.data<double>();
  const auto* values = reinterpret_cast<const float*>(t.data.data());
  for (std::size_t i = 0; i < static_cast<std::size_t>(table.numel()); ++i) {
    if (std::abs(values[i] - expected[i]) > 1e-5) {
      throw Error(file + ": '" + t.name + "' is not MarianMT's sinusoid table (element " + std::to_string(i) +
                  "): learned positions are not converted");
    }
  }
}

}  // namespace

model::ModelConfig hf_marian_config(const std::string& config_json, const std::string& file) {
  const json j = json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(file + ": not a JSON object");
  return model_config(j, file);
}

ImportedModel read_hf_marian(const std::string& dir_name) {
  const fs::path dir(dir_name);
  if (!fs::is_directory(dir))
    throw Error(dir_name + ": not a directory (a MarianMT model as save_pretrained writes it)");
  ImportedModel out;
  out.config = model_config(read_json(dir / "config.json"), (dir / "config.json").string());
  const model::ModelConfig& c = out.config;
  const json tokenizer =
      fs::exists(dir / "tokenizer_config.json") ? read_json(dir / "tokenizer_config.json") : json::object();
  const json separate_value = tokenizer.value("separate_vocabs", json(false));
  if (!separate_value.is_boolean())
    throw Error(dir_name + "/tokenizer_config.json: 'separate_vocabs' must be true or false");
  const bool separate = separate_value.get<bool>();
  out.source = {read_text(dir / "source.spm"), piece_table(dir / "vocab.json", tokenizer, true)};
  out.target = {read_text(dir / "target.spm"),
                piece_table(dir / (separate ? "target_vocab.json" : "vocab.json"), tokenizer, false)};
  // Embeddings with more rows than the vocabulary has pieces (a vocab_size rounded up): the ids past
  // the table's are placeholders that encoding never gives and decoding drops, as the tokenizer
  // treats them. More pieces than rows is an error (write_imported_model).
  for (auto [side, size] : {std::pair{&out.source, c.src_vocab_size}, std::pair{&out.target, c.tgt_vocab_size}}) {
    std::vector<std::string>& pieces = side->table.pieces;
    if (size > static_cast<std::int64_t>(pieces.size()) + 65536) continue;  // not a rounding: an error below
    while (static_cast<std::int64_t>(pieces.size()) < size) {
      side->table.special.push_back(static_cast<std::int32_t>(pieces.size()));
      pieces.push_back("<unused:" + std::to_string(pieces.size()) + ">");
    }
  }

  // The weights: model.safetensors, or else pytorch_model.bin (torch.save's format, read without Python).
  const fs::path safetensors = dir / "model.safetensors", torch_file = dir / "pytorch_model.bin";
  std::vector<io::SafeTensor> weights;
  std::string file;
  if (fs::exists(safetensors)) {
    file = safetensors.string();
    weights = io::read_safetensors(file).tensors;
  } else if (fs::exists(torch_file)) {
    file = torch_file.string();
    weights = io::read_torch_state_dict(file);
  } else {
    throw Error(dir_name + ": no model.safetensors or pytorch_model.bin (sharded weights are not read)");
  }
  const auto find = [&](const std::string& name) -> const io::SafeTensor* {
    for (const io::SafeTensor& t : weights) {
      if (t.name == name) return &t;
    }
    return nullptr;
  };
  std::set<std::string> have;
  for (const io::SafeTensor& t : weights) {
    if (t.name.find("embed_positions") != std::string::npos) {
      check_positions(t, c, file);
      continue;
    }
    const std::string ours = dragoman_name(t.name, c);
    if (ours.empty()) {
      // Tied copies that some versions save next to the tensor they repeat.
      const bool tied_copy = t.name == "lm_head.weight" || t.name == "model.encoder.embed_tokens.weight" ||
                             t.name == "model.decoder.embed_tokens.weight";
      if (tied_copy) continue;
      throw Error(file + ": tensor '" + t.name + "' has no place in a Dragoman model");
    }
    std::vector<std::int64_t> shape = t.shape;
    if (ours == "output.bias") shape = {t.numel()};  // [1, V] -> [V]
    out.tensors.push_back(renamed_tensor(t, ours, shape));
    have.insert(ours);
  }
  // A tied model saved by a version that keeps only the encoder's or decoder's copy of the table.
  if (c.share_embeddings && have.count("embed.weight") == 0) {
    for (const char* name : {"model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"}) {
      if (const io::SafeTensor* t = find(name)) {
        out.tensors.push_back(renamed_tensor(*t, "embed.weight", t->shape));
        break;
      }
    }
  }
  out.metadata["converted_from"] = "huggingface-marian";
  // generate()'s search settings as the model file's recommended ones (decode/model_files.h):
  // score / |Y|^length_penalty, length_penalty 1.0 unless generation_config.json says otherwise.
  // (Older models keep them in config.json.)
  const json generation =
      read_json(dir / (fs::exists(dir / "generation_config.json") ? "generation_config.json" : "config.json"));
  out.metadata["decoding.length_normalization"] = "power";
  const json penalty = generation.value("length_penalty", json(1.0));
  const json beams = generation.value("num_beams", json(1));
  if (!penalty.is_number() || !beams.is_number_integer()) {
    throw Error(dir_name + ": generate()'s length_penalty and num_beams must be numbers");
  }
  out.metadata["decoding.length_penalty"] = penalty.dump();
  out.metadata["decoding.beam"] = beams.dump();
  return out;
}

}  // namespace dragoman::convert
