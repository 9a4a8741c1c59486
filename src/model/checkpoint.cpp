// Model files (see checkpoint.h).
#include "model/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace dragoman::model {
namespace {

const std::set<std::string> kReservedMetadata = {"format", "format_version", "model_config", "step",
                                                 "dragoman_version"};

bool is_imported_vocabulary(const std::string& name) {
  return std::find(std::begin(kImportedVocabularyTensors), std::end(kImportedVocabularyTensors), name) !=
         std::end(kImportedVocabularyTensors);
}

}  // namespace

io::SafeTensorsFile model_to_safetensors(const Transformer& model, const ModelFileInfo& info,
                                         std::optional<DType> file_dtype) {
  if (model.weights_discarded()) {
    throw Error("a model whose weights were given up for decoding (translate) cannot be saved");
  }
  io::SafeTensorsFile file;
  for (const auto& [key, value] : info.metadata) {
    if (kReservedMetadata.count(key) != 0) throw Error("model metadata key '" + key + "' is reserved");
    file.metadata[key] = value;
  }
  file.metadata["format"] = kModelFormat;
  file.metadata["format_version"] = std::to_string(kModelFormatVersion);
  file.metadata["model_config"] = model.config().to_json().dump();
  file.metadata["step"] = std::to_string(info.step);
  file.metadata["dragoman_version"] = DRAGOMAN_VERSION;
  const ParameterSet& params = model.parameters();
  const DType stored = file_dtype.value_or(params.values().dtype());
  if (stored != DType::kF32 && stored != DType::kF64 && stored != DType::kBF16 && stored != DType::kF16) {
    throw Error(std::string("model files store F32, F64, BF16 or F16 weights, not ") + dtype_name(stored));
  }
  const Tensor values = params.values().to(Device::cpu()).to(stored);
  const std::size_t elem = dtype_size(values.dtype());
  for (const ParameterEntry& e : params.entries()) {
    io::SafeTensor t;
    t.name = e.spec.name;
    t.dtype = values.dtype();
    t.shape = e.spec.shape;
    t.data.resize(static_cast<std::size_t>(e.numel) * elem);
    std::memcpy(t.data.data(), static_cast<const char*>(values.raw_data()) + static_cast<std::size_t>(e.offset) * elem,
                t.data.size());
    file.tensors.push_back(std::move(t));
  }
  if (!info.vocabulary.empty()) {
    io::SafeTensor vocab{kVocabularyTensor, DType::kU8, {static_cast<std::int64_t>(info.vocabulary.size())}, {}};
    vocab.data.assign(info.vocabulary.begin(), info.vocabulary.end());
    file.tensors.push_back(std::move(vocab));
  }
  for (const auto& [name, bytes] : info.imported) {
    if (!is_imported_vocabulary(name)) throw Error("model file: '" + name + "' is not a vocabulary tensor");
    io::SafeTensor part{name, DType::kU8, {static_cast<std::int64_t>(bytes.size())}, {}};
    part.data.assign(bytes.begin(), bytes.end());
    file.tensors.push_back(std::move(part));
  }
  return file;
}

Transformer model_from_safetensors(const io::SafeTensorsFile& file, const std::string& name, DType dtype,
                                   ModelFileInfo* info) {
  return model_from_safetensors(file, name, ParameterPrecision{dtype, dtype, true}, info);
}

namespace {

// The model of a file whose header (metadata, names, dtypes, shapes) is `file` and whose tensor i
// `read(i, destination)` puts in memory: each straight into its parameter when the dtype matches on
// the CPU, so that loading a model from disk never holds a second copy of it.
Transformer model_from_tensors(const io::SafeTensorsFile& file, const std::function<void(std::size_t, void*)>& read,
                               const std::string& name, const ParameterPrecision& precision, ModelFileInfo* info,
                               Device device) {
  const DType dtype = precision.master;
  const auto fail = [&](const std::string& what) { throw Error(name + ": " + what); };
  const auto meta = [&](const char* key) -> const std::string& {
    const auto it = file.metadata.find(key);
    if (it == file.metadata.end()) fail(std::string("not a Dragoman model file: no '") + key + "' in __metadata__");
    return it->second;
  };
  if (meta("format") != kModelFormat) {
    fail("not a Dragoman model file: format is '" + meta("format") + "', expected '" + kModelFormat + "'");
  }
  if (meta("format_version") != std::to_string(kModelFormatVersion)) {
    fail("model format version " + meta("format_version") + " is not supported by this build (it reads version " +
         std::to_string(kModelFormatVersion) + ")");
  }
  nlohmann::json config_json;
  try {
    config_json = nlohmann::json::parse(meta("model_config"));
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("model_config is not valid JSON: ") + e.what());
  }
  const ModelConfig config = ModelConfig::from_json(config_json, name + " (model_config)");
  // The file's tensors must be the config's parameters, shapes included, before memory is sized by
  // the config: a damaged or hostile config (2^30 layers, d_model 2^20) is refused here instead of
  // sizing allocations that exhaust the machine. Each layer has tensors, so the layer counts are
  // bounded by the file first (the list of parameter names is as long as the layers).
  std::map<std::string, const io::SafeTensor*> by_name;
  for (const io::SafeTensor& t : file.tensors) {
    if (t.name != kVocabularyTensor && !is_imported_vocabulary(t.name)) by_name.emplace(t.name, &t);
  }
  if (config.encoder_layers + config.decoder_layers > static_cast<std::int64_t>(by_name.size())) {
    fail("model_config has " + std::to_string(config.encoder_layers) + " + " + std::to_string(config.decoder_layers) +
         " layers, but the file holds only " + std::to_string(by_name.size()) + " parameter tensors");
  }
  for (const ParameterSpec& spec : transformer_parameter_specs(config)) {
    const auto it = by_name.find(spec.name);
    if (it == by_name.end()) fail("missing parameter '" + spec.name + "'");
    if (it->second->shape != spec.shape) {
      fail("tensor '" + spec.name + "' has shape " + shape_string(it->second->shape) + ", the config needs " +
           shape_string(spec.shape));
    }
  }
  Transformer model(config, precision, device);

  ModelFileInfo read_info;
  if (const auto it = file.metadata.find("step"); it != file.metadata.end()) {
    try {
      std::size_t used = 0;
      read_info.step = std::stoll(it->second, &used);
      if (used != it->second.size() || read_info.step < 0) throw std::invalid_argument("step");
    } catch (const std::exception&) {
      fail("metadata 'step' is not a non-negative integer: '" + it->second + "'");
    }
  }
  for (const auto& [key, value] : file.metadata) {
    if (kReservedMetadata.count(key) == 0) read_info.metadata[key] = value;
  }

  ParameterSet& params = model.parameters();
  for (std::size_t i = 0; i < file.tensors.size(); ++i) {
    const io::SafeTensor& t = file.tensors[i];
    if (t.name == kVocabularyTensor) {
      if (t.dtype != DType::kU8 || t.shape.size() != 1) fail(std::string(kVocabularyTensor) + " must be a u8 vector");
      read_info.vocabulary.resize(static_cast<std::size_t>(t.numel()));
      read(i, read_info.vocabulary.data());
      continue;
    }
    if (is_imported_vocabulary(t.name)) {
      if (t.dtype != DType::kU8 || t.shape.size() != 1) fail(t.name + " must be a u8 vector");
      std::string& bytes = read_info.imported[t.name];
      bytes.resize(static_cast<std::size_t>(t.numel()));
      read(i, bytes.data());
      continue;
    }
    // Every parameter is there with its shape (checked above): a tensor that is not one is extra.
    if (!params.contains(t.name)) fail("unexpected tensor '" + t.name + "' (not a parameter of this model config)");
    if (t.dtype != DType::kF32 && t.dtype != DType::kF64 && t.dtype != DType::kBF16 && t.dtype != DType::kF16) {
      fail("tensor '" + t.name + "' has dtype " + dtype_name(t.dtype) + ", expected F32, F64, BF16 or F16");
    }
    // Damaged bytes often decode as NaN or infinity: such a model translates to empty lines with
    // score nan, so it is refused here (one pass, cheap next to reading the file).
    const auto check_finite = [&](const void* bytes) {
      const std::int64_t bad = io::first_non_finite(bytes, t.dtype, t.numel());
      if (bad >= 0) {
        fail("tensor '" + t.name + "' holds a non-finite value (NaN or infinity) at element " + std::to_string(bad) +
             ": the file is damaged, or was saved from a diverged run");
      }
    };
    Tensor value = params.value(t.name);
    if (t.dtype == dtype && value.device().is_cpu() && value.is_contiguous()) {
      read(i, value.raw_data());  // the common case: no conversion, no copy
      check_finite(value.raw_data());
    } else {
      Tensor host = Tensor::empty(t.shape, t.dtype);
      read(i, host.raw_data());
      check_finite(host.raw_data());
      value.copy_from(host.to(dtype).to(value.device()));
    }
  }
  model.refresh_compute_weights();
  if (info != nullptr) *info = std::move(read_info);
  return model;
}

}  // namespace

Transformer model_from_safetensors(const io::SafeTensorsFile& file, const std::string& name,
                                   const ParameterPrecision& precision, ModelFileInfo* info, Device device) {
  const auto read = [&](std::size_t i, void* destination) {
    const std::vector<unsigned char>& data = file.tensors[i].data;
    if (!data.empty()) std::memcpy(destination, data.data(), data.size());
  };
  return model_from_tensors(file, read, name, precision, info, device);
}

void save_model(const std::string& path, const Transformer& model, const ModelFileInfo& info,
                std::optional<DType> file_dtype) {
  io::write_safetensors(path, model_to_safetensors(model, info, file_dtype));
}

Transformer load_model(const std::string& path, DType dtype, ModelFileInfo* info) {
  return load_model(path, ParameterPrecision{dtype, dtype, true}, info, Device::cpu());
}

Transformer load_model(const std::string& path, const ParameterPrecision& precision, ModelFileInfo* info,
                       Device device) {
  // Tensor by tensor from the file into the model (SafeTensorsReader): loading peaks at about the
  // model's size, not twice it.
  const io::SafeTensorsReader reader(path);
  const auto read = [&](std::size_t i, void* destination) { reader.read(i, destination); };
  return model_from_tensors(reader.header(), read, path, precision, info, device);
}

}  // namespace dragoman::model
