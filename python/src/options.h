// The options of a Python call (translate_batch, translate_file, score), from the keyword
// arguments the Python layer (python/dragoman/__init__.py) passes on: only those the caller gave,
// everything else the library's own defaults (decode/decoding_options.h, the ones the command line
// takes), so that `dragoman.Translator` translates as `dragoman translate` does without options.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "decode/decoding_options.h"
#include "decode/input_chunks.h"
#include "decode/translation_output.h"

namespace dragoman::python {

struct CallOptions {
  decode::DecodingOptions decoding;  // the search and the batches (device, precision, threads: the Translator's)
  int nbest = 0;                     // > 0: that many hypotheses a sentence
  bool word_scores = false;
  std::string alignment;                        // "", "hard" or "soft"
  int attention_layer = 0, attention_head = 0;  // 1-based; 0: the last layer, the heads' average
  bool noise = false;
  std::optional<std::vector<std::string>> target_prefix;             // translate_batch: one a sentence
  std::optional<std::vector<std::vector<std::string>>> constraints;  // translate_batch: phrases a sentence
  // translate_file only.
  bool scores = false;
  std::string output_format = "text";
  std::string target_prefix_file, constraints_file;
  decode::ChunkOptions chunks;

  decode::OutputOptions output_options() const;
  bool needs_source_words() const { return !alignment.empty(); }
};

// Which call the options are for: each takes its own keys (an unknown one is a TypeError naming it).
enum class CallKind { kTranslateBatch, kTranslateFile };

// The options `given` sets (keyword -> value) over the defaults, checked as translate checks its
// command line (a ValueError naming the keyword and what it takes).
CallOptions parse_options(const pybind11::dict& given, CallKind kind);

// The keywords and their defaults, for dragoman.defaults() and the docs.
pybind11::dict default_options();

}  // namespace dragoman::python
