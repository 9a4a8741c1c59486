// Starting from a model file and freezing parameters (see fine_tuning.h).
#include "train/fine_tuning.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "base/error.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "train/config.h"

namespace dragoman::train {
namespace {

constexpr const char* kFreezeGroups[] = {"embeddings", "encoder", "decoder", "output_bias"};

}  // namespace

bool is_regularisation_key(const std::string& model_key) {
  return model_key == "dropout" || model_key == "attention_dropout" || model_key == "relu_dropout" ||
         model_key == "label_smoothing";
}

model::ModelConfig read_model_file_config(const std::string& path) {
  std::map<std::string, std::string> meta;
  try {
    meta = io::SafeTensorsReader(path).header().metadata;
  } catch (const Error& e) {  // not safetensors at all (it names the file)
    throw Error(std::string(e.what()) +
                " (a Dragoman model file is expected; a Marian, OPUS-MT or Hugging Face model is converted first: "
                "dragoman convert)");
  }
  const auto format = meta.find("format");
  if (format == meta.end() || format->second != model::kModelFormat) {
    throw Error(
        path + ": not a Dragoman model file (" +
        (format == meta.end() ? std::string("no 'format' in its metadata") : "its format is '" + format->second + "'") +
        "); a Marian, OPUS-MT or Hugging Face model is converted first: dragoman convert");
  }
  const auto version = meta.find("format_version");
  if (version == meta.end() || version->second != std::to_string(model::kModelFormatVersion)) {
    throw Error(path + ": model format version " + (version == meta.end() ? std::string("(none)") : version->second) +
                " is not supported by this build (it reads version " + std::to_string(model::kModelFormatVersion) +
                ")");
  }
  const auto config = meta.find("model_config");
  if (config == meta.end()) throw Error(path + ": not a Dragoman model file: no 'model_config' in its metadata");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(config->second);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": model_config is not valid JSON: " + e.what());
  }
  return model::ModelConfig::from_json(json, path + " (model_config)");
}

void apply_init_model(TrainConfig& config, const model::ModelConfig& from, const std::string& path) {
  nlohmann::json merged = config.model.to_json();
  const nlohmann::json model = from.to_json();
  const std::vector<std::string>& given = config.model_keys_given;
  for (const auto& [key, value] : model.items()) {
    if (is_regularisation_key(key)) continue;  // the config's
    if (std::find(given.begin(), given.end(), key) != given.end() && merged[key] != value) {
      throw Error("training.init_from " + path + ": the config's model." + key + " is " + merged[key].dump() +
                  ", the model's " + value.dump() + " (the architecture comes from the model: leave model." + key +
                  " out of the config)");
    }
    merged[key] = value;
  }
  config.model = model::ModelConfig::from_json(merged, "training.init_from " + path);
}

std::vector<std::string> freeze_groups(const std::string& text) {
  std::vector<std::string> groups;
  if (text.empty()) return groups;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, comma - begin);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    begin = comma + 1;
    if (std::find(std::begin(kFreezeGroups), std::end(kFreezeGroups), item) == std::end(kFreezeGroups)) {
      throw Error("training.freeze: '" + item +
                  "' is not a part of the model (a comma-separated list of embeddings, encoder, decoder, "
                  "output_bias)");
    }
    if (std::find(groups.begin(), groups.end(), item) == groups.end()) groups.push_back(item);
  }
  return groups;
}

bool is_frozen(const std::string& name, const std::vector<std::string>& groups) {
  const auto has = [&](const char* group) { return std::find(groups.begin(), groups.end(), group) != groups.end(); };
  const auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
  if (has("embeddings") &&
      (name == "embed.weight" || name == "encoder.embed.weight" || name == "decoder.embed.weight" ||
       name == "encoder.positions.weight" || name == "decoder.positions.weight")) {
    return true;
  }
  if (has("output_bias") && name == "output.bias") return true;
  return (has("encoder") && starts("encoder.")) || (has("decoder") && (starts("decoder.") || starts("output.")));
}

}  // namespace dragoman::train
