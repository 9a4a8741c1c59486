// Loading the models of a translation (see model_files.h).
#include "decode/model_files.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "base/error.h"
#include "io/safetensors.h"

namespace dragoman::decode {
namespace {

// The metadata keys of a model file's recommended decoding settings (DecodingDefaults).
constexpr const char* kBeamKey = "decoding.beam";
constexpr const char* kNormalizationKey = "decoding.length_normalization";
constexpr const char* kAlphaKey = "decoding.length_penalty";

}  // namespace

text::Vocabulary model_vocabulary(const model::ModelFileInfo& info, const std::string& file) {
  if (info.imported.empty()) return text::Vocabulary::from_bytes(info.vocabulary, file + " (vocabulary)");
  const auto part = [&](const std::string& name) -> const std::string& {
    const auto it = info.imported.find(name);
    if (it == info.imported.end()) throw Error(file + ": the model file has no tensor " + name);
    return it->second;
  };
  const auto side = [&](const std::string& which) {
    const std::string prefix = "vocabulary." + which;
    return text::Vocabulary::with_table(
        part(prefix + ".sentencepiece"),
        text::PieceTable::from_json(part(prefix + ".pieces"), file + " (" + prefix + ".pieces)"),
        file + " (" + prefix + ")");
  };
  return text::Vocabulary::pair(side("source"), side("target"));
}

DecodingDefaults decoding_defaults(const model::ModelFileInfo& info, const std::string& file) {
  DecodingDefaults d;
  const auto value = [&](const char* key) -> const std::string* {
    const auto it = info.metadata.find(key);
    return it == info.metadata.end() ? nullptr : &it->second;
  };
  const auto bad = [&](const char* key, const std::string& v, const std::string& expected) {
    return Error(file + ": metadata " + key + " is '" + v + "', expected " + expected);
  };
  if (const std::string* v = value(kBeamKey)) {
    char* end = nullptr;
    const long beam = std::strtol(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || beam < 1 || beam > kMaxBeam) {
      throw bad(kBeamKey, *v, "1.." + std::to_string(kMaxBeam));
    }
    d.beam = static_cast<int>(beam);
  }
  if (const std::string* v = value(kNormalizationKey)) {
    if (*v != "gnmt" && *v != "power" && *v != "none") {
      throw bad(kNormalizationKey, *v, "gnmt, power or none");
    }
    d.normalization = *v;
  }
  if (const std::string* v = value(kAlphaKey)) {
    char* end = nullptr;
    const double alpha = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !(alpha >= 0 && alpha <= kMaxLengthPenalty)) {
      throw bad(kAlphaKey, *v, "0.." + std::to_string(kMaxLengthPenalty));
    }
    d.alpha = alpha;
  }
  return d;
}

void write_decoding_defaults(const std::string& input, const DecodingDefaults& d, const std::string& output) {
  io::SafeTensorsFile file = io::read_safetensors(input);
  const auto format = file.metadata.find("format");
  if (format == file.metadata.end() || format->second != model::kModelFormat) {
    throw Error(input + ": not a Dragoman model file (no __metadata__ format \"" + model::kModelFormat + "\")");
  }
  for (const char* key : {kBeamKey, kNormalizationKey, kAlphaKey}) {
    file.metadata.erase(key);
  }
  if (d.beam) file.metadata[kBeamKey] = std::to_string(*d.beam);
  if (d.normalization) file.metadata[kNormalizationKey] = *d.normalization;
  if (d.alpha) file.metadata[kAlphaKey] = fmt::format("{}", *d.alpha);
  model::ModelFileInfo check;
  check.metadata = file.metadata;
  (void)decoding_defaults(check, output);  // within bounds, as every reader will check them
  io::write_safetensors(output, file);
}

DecodingModels load_decoding_models(const std::vector<std::string>& files, const std::string& precision,
                                    const Device& device, const std::string& shortlist) {
  if (files.empty()) throw Error("translate: no model file");
  DecodingModels out;
  out.files = files;
  DType dtype = DType::kF32;
  const bool int8 = precision == "int8";
  if (!int8 && !parse_precision(precision, dtype)) throw Error("translate: unknown precision " + precision);
  for (const std::string& file : files) {
    model::ModelFileInfo info;
    auto model = std::make_unique<model::Transformer>(
        model::load_model(file, model::ParameterPrecision::decoding(dtype), &info, device));
    if (info.vocabulary.empty() && info.imported.empty()) {
      throw Error(file +
                  ": the model file holds no vocabulary (vocabulary.sentencepiece); translate needs a model "
                  "written by dragoman train, average-checkpoints or convert");
    }
    if (!out.infos.empty() &&
        (info.vocabulary != out.infos.front().vocabulary || info.imported != out.infos.front().imported)) {
      throw Error("ensemble: " + files.front() + " and " + file +
                  " hold different vocabularies: the models of an ensemble must share one vocabulary");
    }
    if (!shortlist.empty()) model->keep_output_rows();  // restrict_output gathers from them
    if (int8) model->quantize_int8();  // the encoder's and decoder's linear layers; embeddings stay f32
    if (device.is_cpu() && dtype == DType::kF32) {
      // Weights packed once for oneDNN's matmul (kernels/cpu/packed_gemm.h): none where it gains nothing.
      const std::size_t packed = model->pack_weights();
      const std::size_t discarded = model->discard_unread_weights();
      spdlog::debug("translate: {}: {} MiB of weights packed for oneDNN's matmul, {} MiB of f32 weights given back",
                    file, packed >> 20, discarded >> 20);
    }
    out.models.push_back(std::move(model));
    out.infos.push_back(std::move(info));
  }
  out.vocabulary = std::make_unique<text::Vocabulary>(model_vocabulary(out.infos.front(), files.front()));
  if (!shortlist.empty()) out.shortlist = std::make_unique<Shortlist>(Shortlist::load(shortlist, *out.vocabulary));
  if (out.models.size() == 1) {
    out.decoder = std::make_unique<TransformerDecoding>(*out.models.front());
  } else {
    std::vector<const model::Transformer*> members;
    for (const auto& m : out.models) members.push_back(m.get());
    out.decoder = std::make_unique<EnsembleDecoding>(std::move(members), files);
  }
  return out;
}

}  // namespace dragoman::decode
