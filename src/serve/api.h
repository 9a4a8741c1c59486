// The requests `dragoman serve` accepts, parsed and checked without HTTP (docs/SERVE.md):
//   POST /v1/translate  JSON {"text": "..." | ["...", ...], "model", "beam", "n_best",
//                       "length_penalty", "word_scores", "alignment", "sampling", "temperature",
//                       "top_k", "top_p", "seed", "target_prefix", "constraints"}
//   POST /translate     LibreTranslate: JSON or form fields q (a string or a list), source,
//                       target, format ("text"), api_key (ignored)
// Anything else in a request (an unknown field, a wrong type, a value out of range, invalid JSON or
// UTF-8, a text with a line break where one sentence is expected) is an ApiError naming it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "decode/beam_search.h"
#include "decode/decoding_options.h"
#include "decode/translation_output.h"

namespace dragoman::serve {

struct ApiError {
  int status = 400;
  std::string message;
};

struct RequestLimits {
  std::int64_t max_sentences = 1000;  // per request (413 beyond)
  int max_beam = decode::kMaxServeBeam;  // decode/decoding_options.h says why a server's is lower than translate's
  int max_constraints = 32;              // per text: each one widens every step's candidates
};

struct TranslateRequest {
  std::vector<std::string> texts;  // one sentence each
  std::string model;               // "" for the default model
  decode::SearchOptions search;
  decode::OutputOptions output;  // JSON, with the n-best list, word scores, alignment as asked
  // Per text (both empty when the request has none): the output's prefix and required phrases.
  std::vector<std::string> target_prefixes;
  std::vector<std::vector<std::string>> constraints;
};

// `defaults`: the server's search options (beam, length penalty, ...), which a request may change.
TranslateRequest parse_translate_request(const std::string& body, const decode::SearchOptions& defaults,
                                         const RequestLimits& limits);

struct LibreRequest {
  std::vector<std::string> q;  // texts; each may hold several lines (translated line by line)
  bool list = false;           // q was a list: the answer's translatedText is one too
  std::string source, target;  // language codes ("auto" allowed for source)
};

// From a JSON body (Content-Type application/json) or from form fields (`fields`, already decoded
// by the HTTP layer: application/x-www-form-urlencoded or multipart), as LibreTranslate reads them.
LibreRequest parse_libre_json(const std::string& body, const RequestLimits& limits);
LibreRequest parse_libre_fields(const std::multimap<std::string, std::string>& fields, const RequestLimits& limits);

// An error's JSON body: {"error": message} (LibreTranslate's shape, used for every endpoint).
std::string error_body(const std::string& message);

// The English name of a language code ("de" -> "German"), or the code itself.
std::string language_name(const std::string& code);

}  // namespace dragoman::serve
