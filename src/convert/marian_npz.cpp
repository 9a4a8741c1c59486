// Reading Marian models (see marian_npz.h).
#include "convert/marian_npz.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "base/error.h"
#include "io/npz.h"
#include "io/read_file.h"

namespace dragoman::convert {
namespace {

namespace fs = std::filesystem;

// Marian starts decoding from a zero vector, not a token: the converter adds a <pad> row of zeros
// for it (as the Hugging Face conversion does), whose logit is this bias: its probability is 0 in
// float and double, so the softmax is Marian's, which has no such column.
constexpr float kStartLogitBias = -1e4f;

std::string read_text(const std::string& path) {
  const std::vector<char> bytes = io::read_file(path);
  return {bytes.begin(), bytes.end()};
}

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_yaml(const std::string& path) { return has_suffix(path, ".yml") || has_suffix(path, ".yaml"); }

model::ModelConfig marian_config(const YAML::Node& y, const std::string& where, ops::SinusoidLayout sinusoids) {
  const auto fail = [&](const std::string& what) { throw Error(where + ": " + what); };
  if (!y.IsMap()) fail("not a YAML map of settings");
  const auto text = [&](const char* key, const std::string& fallback) {
    return y[key] ? y[key].as<std::string>() : fallback;
  };
  const auto integer = [&](const char* key, std::int64_t fallback) {
    return y[key] ? y[key].as<std::int64_t>() : fallback;
  };
  const auto flag = [&](const char* key) { return y[key] && y[key].as<bool>(); };
  const auto refuse_unless = [&](bool ok, const char* key, const std::string& value, const std::string& supported) {
    if (!ok) fail("'" + std::string(key) + "' = '" + value + "' is not supported (" + supported + ")");
  };
  const std::string type = text("type", "");
  refuse_unless(type == "transformer", "type", type, "Dragoman converts Marian's \"transformer\"");
  const std::string autoreg = text("transformer-decoder-autoreg", "self-attention");
  refuse_unless(autoreg == "self-attention", "transformer-decoder-autoreg", autoreg, "self-attention");
  const std::string pre = text("transformer-preprocess", ""), post = text("transformer-postprocess", "dan"),
                    top = text("transformer-postprocess-top", ""), emb = text("transformer-postprocess-emb", "d");
  const bool post_norm = pre.empty() && post == "dan" && top.empty();
  const bool pre_norm = pre == "n" && post == "da" && top == "n";
  refuse_unless(post_norm || pre_norm, "transformer-preprocess", pre + "' / '" + post + "' / '" + top,
                "post-norm: '' / 'dan' / '', or pre-norm: 'n' / 'da' / 'n' for preprocess / postprocess / "
                "postprocess-top");
  refuse_unless(emb == "d" || emb.empty(), "transformer-postprocess-emb", emb,
                "'d' or '': Dragoman has no layer norm on the embeddings");
  const std::string activation = text("transformer-ffn-activation", "swish");
  refuse_unless(activation == "relu" || activation == "swish", "transformer-ffn-activation", activation,
                "relu or swish");
  refuse_unless(integer("transformer-ffn-depth", 2) == 2, "transformer-ffn-depth",
                std::to_string(integer("transformer-ffn-depth", 2)), "2");
  const std::int64_t dec_ffn_depth = integer("transformer-decoder-ffn-depth", 0);
  refuse_unless(dec_ffn_depth == 0 || dec_ffn_depth == 2, "transformer-decoder-ffn-depth",
                std::to_string(dec_ffn_depth), "0 or 2");
  const std::int64_t d_ff = integer("transformer-dim-ffn", 2048), dec_ff = integer("transformer-decoder-dim-ffn", 0);
  refuse_unless(dec_ff == 0 || dec_ff == d_ff, "transformer-decoder-dim-ffn", std::to_string(dec_ff),
                "0, or the encoder's transformer-dim-ffn");
  for (const char* key : {"transformer-no-projection", "transformer-train-position-embeddings", "right-left"}) {
    refuse_unless(!flag(key), key, "true", "false");
  }
  if (y["transformer-tied-layers"] && y["transformer-tied-layers"].size() > 0) {
    fail("'transformer-tied-layers' is not supported (each decoder layer its own weights)");
  }
  refuse_unless(integer("lemma-dim-emb", 0) == 0, "lemma-dim-emb", std::to_string(integer("lemma-dim-emb", 0)),
                "0: factored vocabularies are not converted");

  model::ModelConfig c;
  c.encoder_layers = integer("enc-depth", 6);
  c.decoder_layers = integer("dec-depth", 6);
  c.d_model = integer("dim-emb", 512);
  c.heads = integer("transformer-heads", 8);
  c.d_ff = d_ff;
  c.activation = activation == "relu" ? model::Activation::kRelu : model::Activation::kSwish;
  c.dropout = y["transformer-dropout"] ? y["transformer-dropout"].as<double>() : 0.1;
  c.attention_dropout = y["transformer-dropout-attention"] ? y["transformer-dropout-attention"].as<double>() : 0.0;
  c.relu_dropout = y["transformer-dropout-ffn"] ? y["transformer-dropout-ffn"].as<double>() : 0.0;
  if (y["label-smoothing"]) c.label_smoothing = y["label-smoothing"].as<double>();
  c.positions = model::PositionKind::kSinusoidal;
  c.sinusoids = sinusoids;
  c.max_positions = 1024;  // Marian's sinusoids have no end; Dragoman's table does
  c.scale_embeddings = true;
  c.norm = pre_norm ? model::NormPlacement::kPre : model::NormPlacement::kPost;
  c.layer_norm_eps = 1e-6;  // Marian's transformer layer norm
  c.output_bias = true;     // decoder_ff_logit_out_b (zeros with output-omit-bias), and the start row's
  return c;
}

YAML::Node parse_yaml(const std::string& text, const std::string& where) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(where + ": not YAML: " + e.what());
  }
}

// A vocabulary side: vocab.yml (piece: id) or a .spm (its pieces, by its ids).
text::PieceTable marian_table(const std::string& path, bool source) {
  text::PieceTable t;
  std::map<std::string, std::int32_t> ids;
  if (is_yaml(path)) {
    YAML::Node y;
    try {
      y = YAML::LoadFile(path);
    } catch (const YAML::Exception& e) {
      throw Error(path + ": not a YAML vocabulary: " + e.what());
    }
    if (!y.IsMap()) throw Error(path + ": a Marian vocabulary is a YAML map of piece: id");
    t.pieces.resize(y.size());
    std::vector<bool> seen(y.size(), false);
    for (const auto& item : y) {
      const auto piece = item.first.as<std::string>();
      const auto id = item.second.as<std::int64_t>();
      if (id < 0 || id >= static_cast<std::int64_t>(y.size()) || seen[static_cast<std::size_t>(id)]) {
        throw Error(path + ": the ids must be 0.." + std::to_string(y.size() - 1) + ", each once; '" + piece +
                    "' has " + std::to_string(id));
      }
      seen[static_cast<std::size_t>(id)] = true;
      t.pieces[static_cast<std::size_t>(id)] = piece;
      ids[piece] = static_cast<std::int32_t>(id);
    }
  } else {  // Marian's SentencePiece vocabulary: the model's own pieces and ids
    t.pieces = text::sentencepiece_pieces(read_text(path), path);
    for (std::size_t id = 0; id < t.pieces.size(); ++id) ids[t.pieces[id]] = static_cast<std::int32_t>(id);
  }
  const auto special = [&](const char* piece) {
    const auto it = ids.find(piece);
    if (it == ids.end()) throw Error(path + ": Marian's vocabulary has no '" + std::string(piece) + "'");
    return it->second;
  };
  t.eos_id = special("</s>");
  t.unk_id = special("<unk>");
  t.append_eos = source;  // Marian ends every source sentence with </s>
  t.special = {t.eos_id};
  return t;
}

// The weights under Dragoman's names: Marian's matrices are [in, out] (x W), its biases [1, n].
class Weights {
 public:
  Weights(std::vector<io::SafeTensor> tensors, std::string file) : file_(std::move(file)) {
    for (io::SafeTensor& t : tensors) {
      std::string name = t.name;
      by_name_.emplace(std::move(name), std::move(t));
    }
  }
  bool has(const std::string& name) const { return by_name_.count(name) != 0; }
  const io::SafeTensor& get(const std::string& name) {
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) throw Error(file_ + ": no tensor '" + name + "'");
    used_.insert(name);
    return it->second;
  }
  void unused_is_error() const {
    for (const auto& [name, t] : by_name_) {
      if (used_.count(name) == 0 && name.rfind("special:", 0) != 0) {
        throw Error(file_ + ": tensor '" + name + "' has no place in a Dragoman model");
      }
    }
  }

 private:
  std::map<std::string, io::SafeTensor> by_name_;
  std::set<std::string> used_;
  std::string file_;
};

// An F32 tensor's values (Marian writes its weights in F32; anything else is refused).
std::vector<float> floats(const io::SafeTensor& t, const std::string& file) {
  if (t.dtype != DType::kF32) throw Error(file + ": tensor '" + t.name + "' is " + dtype_name(t.dtype) + ", not F32");
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

io::SafeTensor f32_tensor(const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& values) {
  io::SafeTensor t{name, DType::kF32, std::move(shape), {}};
  t.data.resize(values.size() * sizeof(float));
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

}  // namespace

model::ModelConfig marian_model_config(const std::string& model_yml, const std::string& where,
                                       ops::SinusoidLayout sinusoids) {
  try {
    return marian_config(parse_yaml(model_yml, where), where, sinusoids);
  } catch (const YAML::Exception& e) {  // a value of the wrong type
    throw Error(where + ": " + e.what());
  }
}

namespace {

ImportedModel read_marian_files(const MarianInputs& in);

}  // namespace

ImportedModel read_marian(const MarianInputs& in) {
  try {
    return read_marian_files(in);
  } catch (const YAML::Exception& e) {  // a value of the wrong type in a YAML file
    throw Error(in.model + ": " + e.what());
  }
}

namespace {

ImportedModel read_marian_files(const MarianInputs& in) {
  std::string model_path = in.model;
  std::vector<std::string> vocabs = in.vocabs;
  std::map<std::string, std::string> metadata;
  if (is_yaml(in.model)) {  // decoder.yml: models, vocabs (paths relative to it), beam-size, normalize
    const fs::path dir = fs::path(in.model).parent_path();
    YAML::Node d;
    try {
      d = YAML::LoadFile(in.model);
    } catch (const YAML::Exception& e) {
      throw Error(in.model + ": not YAML: " + e.what());
    }
    if (!d["models"] || d["models"].size() != 1) {
      throw Error(in.model + ": 'models' must name one model (convert the models of an ensemble one by one)");
    }
    model_path = (dir / d["models"][0].as<std::string>()).string();
    if (vocabs.empty() && d["vocabs"]) {
      for (const auto& v : d["vocabs"]) vocabs.push_back((dir / v.as<std::string>()).string());
    }
    // Its search settings, as the model file's recommended ones (decode/model_files.h).
    if (d["beam-size"]) metadata["decoding.beam"] = d["beam-size"].as<std::string>();
    if (d["normalize"]) {
      const double alpha = d["normalize"].as<double>();
      metadata["decoding.length_normalization"] = alpha > 0 ? "power" : "none";
      metadata["decoding.length_penalty"] = d["normalize"].as<std::string>();
    }
  }
  if (vocabs.empty()) {
    const fs::path decoder = fs::path(in.model).parent_path() / "decoder.yml";
    throw Error(in.model + ": no vocabulary: give it with --vocab (vocab.yml, or a .spm whose pieces are the ids)" +
                (fs::exists(decoder) ? ", or convert " + decoder.string() + ", which names the model and its vocabularies"
                                     : std::string()));
  }
  if (vocabs.size() > 2) {
    throw Error(in.model + ": give one vocabulary, or two (source, target), not " + std::to_string(vocabs.size()));
  }
  std::vector<std::string> spms = in.spms;
  if (spms.empty() && !is_yaml(vocabs.front())) spms = vocabs;  // .spm vocabularies cut the text too
  if (spms.empty()) {
    const fs::path dir = fs::path(vocabs.front()).parent_path();
    for (const char* name : {"source.spm", "target.spm"}) {
      if (!fs::exists(dir / name)) {
        throw Error(in.model + ": no " + std::string(name) + " beside " + vocabs.front() +
                    ": name the SentencePiece models with --spm");
      }
      spms.push_back((dir / name).string());
    }
  }

  Weights w(io::read_npz(model_path), model_path);
  const io::SafeTensor& yml = w.get("special:model.yml");
  std::string yml_text(yml.data.begin(), yml.data.end());
  while (!yml_text.empty() && yml_text.back() == '\0') yml_text.pop_back();
  const std::string where = model_path + " (special:model.yml)";
  const YAML::Node y = parse_yaml(yml_text, where);
  if (!y.IsMap()) throw Error(where + ": not a YAML map of settings");
  const bool tied_output = (y["tied-embeddings-all"] && y["tied-embeddings-all"].as<bool>()) ||
                           (y["tied-embeddings"] && y["tied-embeddings"].as<bool>());
  ImportedModel out;
  out.config = marian_config(y, where, in.sinusoids);
  model::ModelConfig& c = out.config;
  out.source = {read_text(spms.front()), marian_table(vocabs.front(), true)};
  out.target = {read_text(spms.back()), marian_table(vocabs.back(), false)};

  // The start row: <pad> after the last id of both sides (ids past a smaller side's own are unused
  // placeholders, zero rows: pad_id must be outside both vocabularies' real ids).
  const auto vs = static_cast<std::int64_t>(out.source.table.pieces.size());
  const auto vt = static_cast<std::int64_t>(out.target.table.pieces.size());
  const bool shared = w.has("Wemb");
  if (shared && vs != vt) throw Error(model_path + ": one embedding table (Wemb) for vocabularies of two sizes");
  const std::int64_t d = c.d_model, pad = std::max(vs, vt);
  const auto embedding = [&](const std::string& name, std::int64_t rows) {
    const io::SafeTensor& t = w.get(name);
    if (t.shape != std::vector<std::int64_t>{rows, d}) {
      throw Error(model_path + ": '" + name + "' is not [" + std::to_string(rows) + ", " + std::to_string(d) +
                  "] (the vocabulary's size and dim-emb)");
    }
    std::vector<float> v = floats(t, model_path);
    v.resize(static_cast<std::size_t>((pad + 1) * d), 0.0f);
    return v;
  };
  c.src_vocab_size = c.tgt_vocab_size = pad + 1;
  c.share_embeddings = shared;
  c.pad_id = c.bos_id = static_cast<std::int32_t>(pad);
  c.eos_id = out.target.table.eos_id;
  if (shared) {
    out.tensors.push_back(f32_tensor("embed.weight", {pad + 1, d}, embedding("Wemb", vt)));
  } else {
    out.tensors.push_back(f32_tensor("encoder.embed.weight", {pad + 1, d}, embedding("encoder_Wemb", vs)));
    out.tensors.push_back(f32_tensor("decoder.embed.weight", {pad + 1, d}, embedding("decoder_Wemb", vt)));
  }
  for (ImportedSide* side : {&out.source, &out.target}) {
    std::vector<std::string>& pieces = side->table.pieces;
    while (static_cast<std::int64_t>(pieces.size()) < pad)
      pieces.push_back("<unused:" + std::to_string(pieces.size()) + ">");
    pieces.push_back("<pad>");
    side->table.special.push_back(c.pad_id);
  }
  c.tie_output = !w.has("decoder_ff_logit_out_W");
  if (!c.tie_output) {
    const io::SafeTensor& t = w.get("decoder_ff_logit_out_W");  // [D, V]
    io::SafeTensor out_w = renamed_tensor(t, "output.weight", {vt, d}, true);
    out_w.data.resize(static_cast<std::size_t>((pad + 1) * d) * sizeof(float), 0);
    out_w.shape = {pad + 1, d};
    if (t.dtype != DType::kF32) throw Error(model_path + ": 'decoder_ff_logit_out_W' is not F32");
    out.tensors.push_back(std::move(out_w));
  } else if (!tied_output && !shared) {
    throw Error(model_path + ": no decoder_ff_logit_out_W, but the config does not tie the output to the embeddings");
  }
  std::vector<float> bias(static_cast<std::size_t>(vt), 0.0f);  // output-omit-bias: none in the file
  if (w.has("decoder_ff_logit_out_b")) bias = floats(w.get("decoder_ff_logit_out_b"), model_path);
  if (static_cast<std::int64_t>(bias.size()) != vt)
    throw Error(model_path + ": 'decoder_ff_logit_out_b' is not [1, V]");
  bias.resize(static_cast<std::size_t>(pad + 1), kStartLogitBias);  // no probability for the added ids
  out.tensors.push_back(f32_tensor("output.bias", {pad + 1}, bias));

  // Layers: Marian's l1.. are Dragoman's 0..; matrices transposed, biases and norms flattened.
  const std::string norm_suffix = c.norm == model::NormPlacement::kPre ? "_pre" : "";
  const auto linear = [&](const std::string& theirs, const std::string& ours, const char* wname, const char* bname) {
    const io::SafeTensor& t = w.get(theirs + "_" + wname);
    if (t.shape.size() != 2) throw Error(model_path + ": '" + t.name + "' is not a matrix");
    out.tensors.push_back(renamed_tensor(t, ours + ".weight", {t.shape[1], t.shape[0]}, true));
    const io::SafeTensor& b = w.get(theirs + "_" + bname);
    out.tensors.push_back(renamed_tensor(b, ours + ".bias", {b.numel()}));
  };
  const auto norm = [&](const std::string& theirs, const std::string& ours) {
    const io::SafeTensor& scale = w.get(theirs + "_ln_scale" + norm_suffix);
    const io::SafeTensor& bias_t = w.get(theirs + "_ln_bias" + norm_suffix);
    out.tensors.push_back(renamed_tensor(scale, ours + ".weight", {scale.numel()}));
    out.tensors.push_back(renamed_tensor(bias_t, ours + ".bias", {bias_t.numel()}));
  };
  const auto attention = [&](const std::string& theirs, const std::string& ours) {
    linear(theirs, ours + ".q_proj", "Wq", "bq");
    linear(theirs, ours + ".k_proj", "Wk", "bk");
    linear(theirs, ours + ".v_proj", "Wv", "bv");
    linear(theirs, ours + ".out_proj", "Wo", "bo");
    norm(theirs + "_Wo", ours + "_norm");
  };
  const auto ffn = [&](const std::string& theirs, const std::string& ours) {
    linear(theirs, ours + ".ffn.fc1", "W1", "b1");
    linear(theirs, ours + ".ffn.fc2", "W2", "b2");
    norm(theirs + "_ffn", ours + ".ffn_norm");
  };
  for (std::int64_t i = 0; i < c.encoder_layers; ++i) {
    const std::string theirs = "encoder_l" + std::to_string(i + 1), ours = "encoder.layers." + std::to_string(i);
    attention(theirs + "_self", ours + ".self_attn");
    ffn(theirs + "_ffn", ours);
  }
  for (std::int64_t i = 0; i < c.decoder_layers; ++i) {
    const std::string theirs = "decoder_l" + std::to_string(i + 1), ours = "decoder.layers." + std::to_string(i);
    attention(theirs + "_self", ours + ".self_attn");
    attention(theirs + "_context", ours + ".cross_attn");
    ffn(theirs + "_ffn", ours);
  }
  if (c.norm == model::NormPlacement::kPre) {
    for (const char* side : {"encoder", "decoder"}) {
      const io::SafeTensor& scale = w.get(std::string(side) + "_top_ln_scale");
      const io::SafeTensor& bias_t = w.get(std::string(side) + "_top_ln_bias");
      out.tensors.push_back(renamed_tensor(scale, std::string(side) + ".final_norm.weight", {scale.numel()}));
      out.tensors.push_back(renamed_tensor(bias_t, std::string(side) + ".final_norm.bias", {bias_t.numel()}));
    }
  }
  w.unused_is_error();
  out.metadata = metadata;
  out.metadata["converted_from"] = "marian";
  out.metadata.emplace("decoding.length_normalization", "power");  // Marian's |Y|^alpha
  return out;
}

}  // namespace

}  // namespace dragoman::convert
