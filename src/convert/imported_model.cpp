// Writing imported models (see imported_model.h).
#include "convert/imported_model.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "base/error.h"
#include "model/checkpoint.h"
#include "model/transformer.h"

namespace dragoman::convert {

io::SafeTensor renamed_tensor(const io::SafeTensor& source, const std::string& name, std::vector<std::int64_t> shape,
                              bool transpose) {
  io::SafeTensor t{name, source.dtype, std::move(shape), {}};
  if (t.numel() != source.numel()) {
    throw Error("tensor '" + source.name + "' has " + std::to_string(source.numel()) + " elements, '" + name +
                "' needs " + std::to_string(t.numel()));
  }
  if (!transpose) {
    t.data = source.data;
    return t;
  }
  if (source.shape.size() != 2 || t.shape.size() != 2 || t.shape[0] != source.shape[1] ||
      t.shape[1] != source.shape[0]) {
    throw Error("tensor '" + source.name + "': a transposed matrix needs shapes [a, b] and [b, a]");
  }
  const std::size_t elem = dtype_size(source.dtype);
  const std::int64_t rows = source.shape[0], cols = source.shape[1];
  t.data.resize(source.data.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      std::memcpy(&t.data[static_cast<std::size_t>(c * rows + r) * elem],
                  &source.data[static_cast<std::size_t>(r * cols + c) * elem], elem);
    }
  }
  return t;
}

void write_imported_model(const ImportedModel& model, const std::string& output, const std::string& what) {
  const model::ModelConfig& c = model.config;
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  const auto check_side = [&](const char* side, const ImportedSide& s, std::int64_t size) {
    if (static_cast<std::int64_t>(s.table.pieces.size()) != size) {
      throw Error(what + ": the " + std::string(side) + " vocabulary has " + std::to_string(s.table.pieces.size()) +
                  " pieces, the model's embeddings " + std::to_string(size) + " rows");
    }
    // Loads the SentencePiece model and checks the table as translate will.
    (void)text::Vocabulary::with_table(s.sentencepiece, s.table, what + " (" + side + " vocabulary)");
  };
  check_side("source", model.source, c.src_vocab_size);
  check_side("target", model.target, c.tgt_vocab_size);

  io::SafeTensorsFile file;
  file.metadata = model.metadata;
  file.metadata["format"] = model::kModelFormat;
  file.metadata["format_version"] = std::to_string(model::kModelFormatVersion);
  file.metadata["model_config"] = c.to_json().dump();
  file.metadata["step"] = "0";
  file.metadata["dragoman_version"] = DRAGOMAN_VERSION;
  // Dragoman's parameter order (the model's own files'), whatever order the source had.
  std::map<std::string, std::size_t> rank;
  for (const model::ParameterSpec& spec : model::transformer_parameter_specs(c)) rank.emplace(spec.name, rank.size());
  file.tensors = model.tensors;
  std::stable_sort(file.tensors.begin(), file.tensors.end(), [&](const io::SafeTensor& a, const io::SafeTensor& b) {
    const auto ra = rank.find(a.name), rb = rank.find(b.name);
    return (ra == rank.end() ? rank.size() : ra->second) < (rb == rank.end() ? rank.size() : rb->second);
  });
  const auto bytes_tensor = [&](const std::string& name, const std::string& bytes) {
    io::SafeTensor t{name, DType::kU8, {static_cast<std::int64_t>(bytes.size())}, {}};
    t.data.assign(bytes.begin(), bytes.end());
    file.tensors.push_back(std::move(t));
  };
  bytes_tensor("vocabulary.source.sentencepiece", model.source.sentencepiece);
  bytes_tensor("vocabulary.source.pieces", model.source.table.to_json());
  bytes_tensor("vocabulary.target.sentencepiece", model.target.sentencepiece);
  bytes_tensor("vocabulary.target.pieces", model.target.table.to_json());
  // Everything loading checks (exactly the config's parameters, shapes, finite values), before writing.
  (void)model::model_from_safetensors(file, what, DType::kF32);
  io::write_safetensors(output, file);
}

}  // namespace dragoman::convert
