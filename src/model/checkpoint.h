// Model files: one safetensors file (readable by Python's safetensors and numpy) holding every
// parameter by its docs/MODEL.md name, plus
//   __metadata__: format = "dragoman-model", format_version = "1", model_config = the resolved
//                 ModelConfig as JSON, step = the training step, dragoman_version
//   vocabulary.sentencepiece: u8 [n], the SentencePiece model (absent when the model has none)
//   or, for an imported model (docs/MODELS.md), the source and target sides each as a SentencePiece
//   model and a piece table (text/vocabulary.h PieceTable as JSON): vocabulary.source.sentencepiece,
//   vocabulary.source.pieces, vocabulary.target.sentencepiece, vocabulary.target.pieces (u8 [n])
// A model file alone is enough to translate. Writes are atomic (io/atomic_file.h). Loading checks
// the format, the version, the config, and that the tensors are exactly the config's parameters
// with the right shapes; every failure is a dragoman::Error naming the file and the problem.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "io/safetensors.h"
#include "model/transformer.h"

namespace dragoman::model {

inline constexpr const char* kModelFormat = "dragoman-model";
inline constexpr int kModelFormatVersion = 1;
inline constexpr const char* kVocabularyTensor = "vocabulary.sentencepiece";
inline constexpr const char* kImportedVocabularyTensors[] = {
    "vocabulary.source.sentencepiece", "vocabulary.source.pieces", "vocabulary.target.sentencepiece",
    "vocabulary.target.pieces"};

struct ModelFileInfo {
  std::int64_t step = 0;
  std::string vocabulary;                       // SentencePiece model bytes; empty if none
  std::map<std::string, std::string> imported;  // an imported model's kImportedVocabularyTensors
  std::map<std::string, std::string> metadata;  // more __metadata__ entries (not the reserved keys)
};

// The safetensors content of a model: its master weights in their dtype, or in `file_dtype` (F32,
// F64, BF16 or F16: rounded to nearest even, half the size of F32 for the 16-bit types).
io::SafeTensorsFile model_to_safetensors(const Transformer& model, const ModelFileInfo& info,
                                         std::optional<DType> file_dtype = std::nullopt);
// The model of a decoded file (F32, F64, BF16 or F16 tensors); `name` is used in messages.
// Parameters are converted to `dtype` (widening a 16-bit file is exact).
Transformer model_from_safetensors(const io::SafeTensorsFile& file, const std::string& name, DType dtype,
                                   ModelFileInfo* info = nullptr);
// The same, held as `precision` says on `device`: the file's tensors are converted to the master
// dtype (a 16-bit decoding model rounds f32 weights to nearest even), and the compute weights
// refreshed. A file holds no device: a model saved from a GPU run loads on the CPU and back.
Transformer model_from_safetensors(const io::SafeTensorsFile& file, const std::string& name,
                                   const ParameterPrecision& precision, ModelFileInfo* info = nullptr,
                                   Device device = Device::cpu());

void save_model(const std::string& path, const Transformer& model, const ModelFileInfo& info,
                std::optional<DType> file_dtype = std::nullopt);
Transformer load_model(const std::string& path, DType dtype = DType::kF32, ModelFileInfo* info = nullptr);
Transformer load_model(const std::string& path, const ParameterPrecision& precision, ModelFileInfo* info = nullptr,
                       Device device = Device::cpu());

}  // namespace dragoman::model
