// What `dragoman convert` builds from another toolkit's model before it becomes a Dragoman model
// file (docs/MODELS.md): the config, the parameters under Dragoman's names (docs/MODEL.md), and the
// vocabulary's two sides. The readers of each format (hf_marian.h, marian_npz.h) fill it; writing
// checks it as loading a model file does (names, shapes, finite values) before anything is written.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/config.h"
#include "text/vocabulary.h"

namespace dragoman::convert {

struct ImportedSide {
  std::string sentencepiece;  // the SentencePiece model's bytes
  text::PieceTable table;
};

struct ImportedModel {
  model::ModelConfig config;
  std::vector<io::SafeTensor> tensors;  // Dragoman's parameter names, F32/F16/BF16/F64
  ImportedSide source, target;
  std::map<std::string, std::string> metadata;  // converted_from, ... (written into __metadata__)
};

// Validates `model` (config, every parameter with its shape, finite values, the vocabulary against
// the config's sizes and special ids) and writes it as a model file, atomically. Errors name `what`
// (the input) and the problem.
void write_imported_model(const ImportedModel& model, const std::string& output, const std::string& what);

// A float tensor of `name` and `shape` with the data of `source` (same element count), keeping its
// dtype; `transpose` swaps the two axes of a matrix (Marian stores [in, out]).
io::SafeTensor renamed_tensor(const io::SafeTensor& source, const std::string& name, std::vector<std::int64_t> shape,
                              bool transpose = false);

}  // namespace dragoman::convert
