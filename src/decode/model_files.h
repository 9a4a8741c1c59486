// The models translate (and serve) decode with, loaded from files: one model or an ensemble, each
// cast to the decoding precision on its device, int8-quantized or packed for oneDNN on the CPU, and
// the vocabulary embedded in the first file (an ensemble's files must all hold the same one).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "decode/decoding_model.h"
#include "decode/decoding_options.h"
#include "decode/shortlist.h"
#include "device/device.h"
#include "model/checkpoint.h"
#include "model/transformer.h"
#include "text/vocabulary.h"

namespace dragoman::decode {

struct DecodingModels {
  std::vector<std::string> files;
  std::vector<std::unique_ptr<model::Transformer>> models;
  std::vector<model::ModelFileInfo> infos;
  std::unique_ptr<text::Vocabulary> vocabulary;
  std::unique_ptr<DecodingModel> decoder;  // TransformerDecoding for one model, else EnsembleDecoding
  std::unique_ptr<Shortlist> shortlist;    // when one was given (SearchOptions::shortlist)

  const DecodingModel& decoding() const { return *decoder; }
};

// The vocabulary a model file holds: its SentencePiece model, or an imported model's two sides.
text::Vocabulary model_vocabulary(const model::ModelFileInfo& info, const std::string& file);

// The decoding settings a model file recommends (DecodingDefaults, decoding_options.h: metadata
// decoding.beam, decoding.length_normalization, decoding.length_penalty). translate and serve use
// them for the options not given on the command line (apply_model_defaults). A malformed value is
// an error naming the file and the key.
DecodingDefaults decoding_defaults(const model::ModelFileInfo& info, const std::string& file);

// Writes the model file `input` to `output` (atomically; it may be `input` itself) with its
// recommended decoding settings replaced by `d`: the given fields written as decoding.* metadata,
// the others removed (an empty DecodingDefaults clears them all). The tensors and all other
// metadata are kept as they are. Throws, naming the file, unless `input` is a Dragoman model file,
// and unless `d` is within the bounds decoding_defaults() reads.
void write_decoding_defaults(const std::string& input, const DecodingDefaults& d, const std::string& output);

// `precision`: "fp32", "bf16", "fp16" or "int8" (the CPU). Errors name the file: a model without a
// vocabulary, or an ensemble member whose vocabulary differs from the first model's. `shortlist`:
// a vocabulary shortlist file (shortlist.h) read against the vocabulary, the models' output rows
// kept for it (Transformer::keep_output_rows); empty: none.
DecodingModels load_decoding_models(const std::vector<std::string>& files, const std::string& precision,
                                    const Device& device, const std::string& shortlist = "");

}  // namespace dragoman::decode
