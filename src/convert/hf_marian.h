// Hugging Face MarianMT models (docs/MODELS.md): a directory as save_pretrained writes it, e.g. an
// OPUS-MT model from the Hub (Helsinki-NLP/opus-mt-*): config.json, model.safetensors or
// pytorch_model.bin (read without Python: io/torch_pickle.h), source.spm and target.spm, vocab.json (and
// target_vocab.json when the tokenizer has separate vocabularies), tokenizer_config.json.
#pragma once

#include <string>

#include "convert/imported_model.h"

namespace dragoman::convert {

// config.json's text as a ModelConfig, or an Error naming the key Dragoman cannot represent.
model::ModelConfig hf_marian_config(const std::string& config_json, const std::string& file);

// The model of `dir`, or an Error naming the file and the key or tensor that Dragoman cannot
// represent.
ImportedModel read_hf_marian(const std::string& dir);

}  // namespace dragoman::convert
