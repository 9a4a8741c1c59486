// Which importer reads a model given to `dragoman convert`: a Hugging Face MarianMT directory
// (config.json beside the weights) or a Marian model (a model.npz, or the decoder.yml that names
// one and its vocabularies; a directory holding a decoder.yml stands for it).
#pragma once

#include <string>

namespace dragoman::convert {

enum class ModelFormat { kHfMarian, kMarian };

struct DetectedModel {
  ModelFormat format = ModelFormat::kMarian;
  std::string path;    // what the importer reads: the MarianMT directory, the .npz or the decoder.yml
  std::string reason;  // why: "a directory with config.json", ...
};

// The format of `input`; throws an Error that says what was expected when it is none of them.
DetectedModel detect_model_format(const std::string& input);

// The format `input` is given as (--from hf or marian), checked against what it is: a mismatch
// is an Error naming the likely mistake ("... holds config.json: a Hugging Face MarianMT
// directory; use --from hf, or leave --from out").
DetectedModel model_format_as(const std::string& input, ModelFormat given);

// "hf" or "marian" (convert's --from names).
const char* model_format_name(ModelFormat format);

}  // namespace dragoman::convert
