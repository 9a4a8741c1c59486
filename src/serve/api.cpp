// serve's request parsing and checks (see api.h).
#include "serve/api.h"

#include <fmt/format.h>

#include <limits>

#include <nlohmann/json.hpp>

#include <set>

#include "base/utf8.h"

namespace dragoman::serve {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& message, int status = 400) { throw ApiError{status, message}; }

json parse_json(const std::string& body) {
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    // nlohmann checks UTF-8 in strings: its message says "ill-formed UTF-8" then. A number too
    // large for a double is out_of_range (406), not parse_error: both are invalid JSON here.
    bad(std::string("invalid JSON: ") + e.what());
  }
}

// A text to translate: valid UTF-8 (guaranteed for JSON strings; checked for form fields).
void check_text(const std::string& text, const std::string& field) {
  const std::size_t at = utf8::find_invalid(text);
  if (at != std::string::npos) bad(field + ": invalid UTF-8 at byte " + std::to_string(at + 1));
}

// "text"/"q" as a list of strings (a single string is a list of one).
std::vector<std::string> texts_of(const json& value, const std::string& field, const RequestLimits& limits,
                                  bool& list) {
  std::vector<std::string> texts;
  list = value.is_array();
  if (value.is_string()) {
    texts.push_back(value.get<std::string>());
  } else if (value.is_array()) {
    for (const json& item : value) {
      if (!item.is_string())
        bad(field + ": expected a string or a list of strings, got a list holding " + std::string(item.type_name()));
      texts.push_back(item.get<std::string>());
    }
  } else {
    bad(field + ": expected a string or a list of strings, got " + std::string(value.type_name()));
  }
  if (texts.empty()) bad(field + ": no text to translate");
  if (static_cast<std::int64_t>(texts.size()) > limits.max_sentences) {
    bad(field + ": " + std::to_string(texts.size()) + " texts, more than this server's limit of " +
            std::to_string(limits.max_sentences) + " per request",
        413);
  }
  return texts;
}

int integer_in(const json& value, const std::string& field, int low, int high) {
  if (!value.is_number_integer()) bad(field + ": expected an integer, got " + std::string(value.type_name()));
  const auto v = value.get<std::int64_t>();
  if (v < low || v > high) {
    bad(field + ": " + std::to_string(v) + " is not in [" + std::to_string(low) + ", " + std::to_string(high) + "]");
  }
  return static_cast<int>(v);
}

double number_in(const json& value, const std::string& field, double low, double high) {
  if (!value.is_number()) bad(field + ": expected a number, got " + std::string(value.type_name()));
  const double v = value.get<double>();
  if (!(v >= low && v <= high)) {
    bad(field + ": expected a number in [" + fmt::format("{:g}", low) + ", " + fmt::format("{:g}", high) + "]");
  }
  return v;
}

bool boolean(const json& value, const std::string& field) {
  if (!value.is_boolean()) bad(field + ": expected true or false, got " + std::string(value.type_name()));
  return value.get<bool>();
}

// "target_prefix": a string for a single text, a list of strings (one per text) for a list.
std::vector<std::string> target_prefixes_of(const json& value, std::size_t texts, bool list) {
  std::vector<std::string> prefixes;
  if (!list) {
    if (!value.is_string())
      bad("target_prefix: expected a string (text is one), got " + std::string(value.type_name()));
    prefixes.push_back(value.get<std::string>());
  } else {
    if (!value.is_array() || value.size() != texts) {
      bad("target_prefix: expected a list of " + std::to_string(texts) + " strings, one for each text");
    }
    for (const json& item : value) {
      if (!item.is_string()) bad("target_prefix: expected strings in the list, got " + std::string(item.type_name()));
      prefixes.push_back(item.get<std::string>());
    }
  }
  for (std::size_t i = 0; i < prefixes.size(); ++i) {
    if (prefixes[i].find_first_of("\r\n") != std::string::npos) {
      bad("target_prefix[" + std::to_string(i) + "]: a line break (a prefix is the start of one sentence)");
    }
  }
  return prefixes;
}

// One text's constraints: a list of non-empty strings without line breaks.
std::vector<std::string> phrases_of(const json& value, const std::string& field, const RequestLimits& limits) {
  if (!value.is_array()) bad(field + ": expected a list of strings, got " + std::string(value.type_name()));
  if (value.size() > static_cast<std::size_t>(limits.max_constraints)) {
    bad(field + ": " + std::to_string(value.size()) + " constraints, more than this server's limit of " +
        std::to_string(limits.max_constraints) + " per text");
  }
  std::vector<std::string> phrases;
  for (const json& item : value) {
    if (!item.is_string()) bad(field + ": expected strings, got " + std::string(item.type_name()));
    std::string phrase = item.get<std::string>();
    if (phrase.empty()) bad(field + ": an empty constraint");
    if (phrase.find_first_of("\r\n") != std::string::npos) bad(field + ": a constraint with a line break");
    phrases.push_back(std::move(phrase));
  }
  return phrases;
}

// "constraints": a list of strings for a single text, a list of such lists (one per text) for a list.
std::vector<std::vector<std::string>> constraints_of(const json& value, std::size_t texts, bool list,
                                                     const RequestLimits& limits) {
  std::vector<std::vector<std::string>> constraints;
  if (!list) {
    constraints.push_back(phrases_of(value, "constraints", limits));
    return constraints;
  }
  if (!value.is_array() || value.size() != texts) {
    bad("constraints: expected a list of " + std::to_string(texts) + " lists of strings, one for each text");
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    constraints.push_back(phrases_of(value[i], "constraints[" + std::to_string(i) + "]", limits));
  }
  return constraints;
}

}  // namespace

TranslateRequest parse_translate_request(const std::string& body, const decode::SearchOptions& defaults,
                                         const RequestLimits& limits) {
  const json j = parse_json(body);
  if (!j.is_object()) bad("expected a JSON object, got " + std::string(j.type_name()));
  TranslateRequest r;
  r.search = defaults;
  r.search.nbest = 1;
  r.output.format = decode::OutputFormat::kJson;
  bool has_text = false, beam_given = false, shaped = false, list = false;
  const json* prefixes = nullptr;  // read once the texts are known
  const json* constraints = nullptr;
  for (const auto& [key, value] : j.items()) {
    if (key == "text") {
      r.texts = texts_of(value, "text", limits, list);
      has_text = true;
    } else if (key == "target_prefix") {
      prefixes = &value;
    } else if (key == "constraints") {
      constraints = &value;
    } else if (key == "model") {
      if (!value.is_string()) bad("model: expected a string, got " + std::string(value.type_name()));
      r.model = value.get<std::string>();
    } else if (key == "beam") {
      r.search.beam = integer_in(value, "beam", 1, limits.max_beam);
      beam_given = true;
    } else if (key == "sampling") {
      r.search.sampling.enabled = boolean(value, "sampling");
    } else if (key == "temperature") {
      r.search.sampling.temperature = number_in(value, "temperature", 0.01, 100);
      shaped = true;
    } else if (key == "top_k") {
      r.search.sampling.top_k = integer_in(value, "top_k", 0, 1 << 24);
      shaped = true;
    } else if (key == "top_p") {
      r.search.sampling.top_p = number_in(value, "top_p", 1e-6, 1);
      shaped = true;
    } else if (key == "seed") {
      r.search.sampling.seed =
          static_cast<std::uint64_t>(integer_in(value, "seed", 0, std::numeric_limits<int>::max()));
      shaped = true;
    } else if (key == "n_best") {
      r.output.nbest = integer_in(value, "n_best", 1, limits.max_beam);
    } else if (key == "length_penalty") {
      if (!value.is_number()) bad("length_penalty: expected a number, got " + std::string(value.type_name()));
      const double alpha = value.get<double>();
      if (!(alpha >= 0 && alpha <= decode::kMaxLengthPenalty)) {
        bad("length_penalty: expected a number in [0, " + std::to_string(decode::kMaxLengthPenalty) + "]");
      }
      r.search.alpha = alpha;
    } else if (key == "word_scores") {
      r.output.word_scores = boolean(value, "word_scores");
    } else if (key == "alignment") {
      if (value.is_boolean()) {
        r.output.alignment = value.get<bool>() ? decode::AlignmentKind::kHard : decode::AlignmentKind::kNone;
      } else if (value == "hard") {
        r.output.alignment = decode::AlignmentKind::kHard;
      } else if (value == "soft") {
        r.output.alignment = decode::AlignmentKind::kSoft;
      } else {
        bad("alignment: expected true, false, \"hard\" or \"soft\", got " + value.dump());
      }
    } else {
      bad("unknown field \"" + key +
          "\" (expected text, model, beam, n_best, length_penalty, word_scores, alignment, sampling, temperature, "
          "top_k, top_p, seed, target_prefix, constraints)");
    }
  }
  if (!has_text) bad("text: missing (the sentences to translate)");
  for (std::size_t i = 0; i < r.texts.size(); ++i) {
    if (r.texts[i].find_first_of("\r\n") != std::string::npos) {
      bad("text[" + std::to_string(i) + "]: a line break: give one sentence per text (split lines into a list)");
    }
  }
  if (prefixes != nullptr) r.target_prefixes = target_prefixes_of(*prefixes, r.texts.size(), list);
  if (constraints != nullptr) {
    r.constraints = constraints_of(*constraints, r.texts.size(), list, limits);
    if (r.search.sampling.enabled)
      bad("constraints: need the beam search, not sampling (target_prefix works with both)");
  }
  if (shaped && !r.search.sampling.enabled)
    bad("temperature, top_k, top_p and seed shape sampling: give \"sampling\": true");
  if (r.search.sampling.enabled) {  // n_best samples a sentence, no beam
    if (beam_given) bad("beam: is for the beam search; with sampling, n_best gives the samples a sentence");
    r.search.beam = std::max(r.output.nbest, 1);
  }
  if (r.output.nbest > r.search.beam) {
    bad("n_best: " + std::to_string(r.output.nbest) + " is larger than the beam " + std::to_string(r.search.beam));
  }
  r.search.nbest = std::max(r.output.nbest, 1);
  r.search.record_attention = r.output.alignment != decode::AlignmentKind::kNone;
  return r;
}

LibreRequest parse_libre_json(const std::string& body, const RequestLimits& limits) {
  const json j = parse_json(body);
  if (!j.is_object()) bad("expected a JSON object, got " + std::string(j.type_name()));
  LibreRequest r;
  bool has_q = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "q") {
      r.q = texts_of(value, "q", limits, r.list);
      has_q = true;
    } else if (key == "source" || key == "target" || key == "format" || key == "api_key" || key == "alternatives") {
      if (key == "alternatives") {
        integer_in(value, key, 0, 0);  // only the translation itself
        continue;
      }
      if (!value.is_string()) bad(key + ": expected a string, got " + std::string(value.type_name()));
      const std::string v = value.get<std::string>();
      if (key == "source") r.source = v;
      if (key == "target") r.target = v;
      if (key == "format" && v != "text") bad("format: only \"text\" is supported, got \"" + v + "\"");
    } else {
      bad("unknown field \"" + key + "\" (expected q, source, target, format, api_key)");
    }
  }
  if (!has_q) bad("q: missing (the text to translate)");
  if (r.target.empty()) bad("target: missing (a language code)");
  if (r.source.empty()) r.source = "auto";
  return r;
}

LibreRequest parse_libre_fields(const std::multimap<std::string, std::string>& fields, const RequestLimits& limits) {
  static const std::set<std::string> known = {"q", "source", "target", "format", "api_key", "alternatives"};
  json j = json::object();
  for (const auto& [key, value] : fields) {
    if (known.count(key) == 0) bad("unknown field \"" + key + "\" (expected q, source, target, format, api_key)");
    check_text(value, key);
    if (key == "alternatives") {
      if (value != "0") bad("alternatives: only 0 is supported");
      continue;
    }
    if (key == "q" && fields.count("q") > 1) {
      j["q"].push_back(value);  // q given several times: a list
    } else {
      j[key] = value;
    }
  }
  return parse_libre_json(j.dump(), limits);
}

std::string error_body(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string language_name(const std::string& code) {
  static const std::map<std::string, std::string> names = {
      {"ar", "Arabic"},    {"cs", "Czech"},      {"de", "German"},   {"en", "English"},  {"es", "Spanish"},
      {"fi", "Finnish"},   {"fr", "French"},     {"it", "Italian"},  {"ja", "Japanese"}, {"nl", "Dutch"},
      {"pl", "Polish"},    {"pt", "Portuguese"}, {"ro", "Romanian"}, {"ru", "Russian"},  {"tr", "Turkish"},
      {"uk", "Ukrainian"}, {"zh", "Chinese"}};
  const auto it = names.find(code);
  return it == names.end() ? code : it->second;
}

}  // namespace dragoman::serve
