// The decoding options of translate, serve and score on the command line: each declared once, here,
// with its help text and checks, filling one DecodingOptions (decode/decoding_options.h, where the
// defaults are). A subcommand adds the groups it takes, in the order its --help lists them.
#pragma once

#include <CLI/CLI.hpp>

#include "decode/decoding_options.h"

namespace dragoman::cli {

// The groups of decoding options (bits, or-ed together).
enum DecodingOptionGroup : unsigned {
  kSearchOptions = 1u << 0,     // --beam/-b, --length-penalty, --length-normalization, --max-length-a, --max-length-b
  kWordRewardOption = 1u << 1,  // --word-reward (translate's: serve's requests have no word reward)
  kDeviceOptions = 1u << 2,     // --device, --precision, --threads
  kBatchOptions = 1u << 3,      // --batch-tokens (alias --max-batch-tokens), --batch-sentences
};

// Adds the options of `groups` to `sub`, filling `o` (which must outlive the parse). `use`: a
// server's search options are defaults that each request may change, its beam is at most
// kMaxServeBeam, and its batches are one continuous search (their help says so).
void add_decoding_options(CLI::App* sub, decode::DecodingOptions& o, unsigned groups,
                          decode::DecodingUse use = decode::DecodingUse::kBatch);

// Which of --beam, --length-penalty and --length-normalization `sub`'s command line gave (after
// the parse): the others take the model file's recommendation (apply_model_defaults).
decode::GivenSearchOptions given_search_options(const CLI::App& sub);

}  // namespace dragoman::cli
