// Marian models (docs/MODELS.md), e.g. OPUS-MT's downloads: model.npz (its training config inside,
// as the array "special:model.yml"), or the decoder.yml that names it and its vocabularies; the
// vocabularies (vocab.yml: piece -> id, or a .spm whose own ids Marian uses) and the SentencePiece
// models that cut the text (source.spm, target.spm).
#pragma once

#include <string>
#include <vector>

#include "convert/imported_model.h"

namespace dragoman::convert {

struct MarianInputs {
  std::string model;                // model.npz, or a decoder.yml naming one
  std::vector<std::string> vocabs;  // 1 (both sides) or 2 (source, target); empty: decoder.yml's
  std::vector<std::string> spms;    // 1 or 2; empty: the .spm vocabularies, or source.spm and
                                    // target.spm beside the vocabulary (or the model)
  // The sinusoids' frequencies: those of the Hugging Face and CTranslate2 conversions of Marian
  // models (concatenated: the paper's frequencies), or Marian's own (tensor2tensor) (docs/MODELS.md).
  ops::SinusoidLayout sinusoids = ops::SinusoidLayout::kConcatenated;
};

// Marian's model.yml (the training config it keeps in model.npz) as a ModelConfig (vocabulary
// sizes and special ids left to the vocabulary), or an Error naming the setting it cannot represent.
model::ModelConfig marian_model_config(const std::string& model_yml, const std::string& where,
                                       ops::SinusoidLayout sinusoids);

// The model, or an Error naming the file and the setting or tensor Dragoman cannot represent.
ImportedModel read_marian(const MarianInputs& inputs);

}  // namespace dragoman::convert
