// The decoding options shared by translate, serve and score (see decoding_options.h).
#include "decode/decoding_options.h"

#include <optional>
#include <string>

#include "base/error.h"
#include "decode/beam_search.h"
#include "decode/translator.h"

namespace dragoman::decode {

LengthPenalty length_penalty_named(const std::string& name) {
  for (const LengthPenalty p : {LengthPenalty::kGnmt, LengthPenalty::kPower, LengthPenalty::kNone}) {
    if (name == length_penalty_name(p)) return p;
  }
  throw Error("length normalisation: '" + name + "' is not one of gnmt, power, none");
}

int max_beam(DecodingUse use) { return use == DecodingUse::kServer ? kMaxServeBeam : kMaxBeam; }

SearchOptions DecodingOptions::search_options() const {
  SearchOptions s;
  s.beam = beam;
  s.alpha = length_penalty;
  s.length_penalty = length_penalty_named(length_normalization);
  s.word_reward = word_reward;
  s.max_length_a = max_length_a;
  s.max_length_b = max_length_b;
  s.sampling = sampling;
  return s;
}

TranslatorOptions DecodingOptions::translator_options(const Device& on, DecodingUse use) const {
  TranslatorOptions t = TranslatorOptions::for_device(on);
  if (on.is_cpu() && use == DecodingUse::kServer) t.batch_sentences = kServeCpuBatchSentences;
  if (batch_tokens > 0) t.batch_tokens = batch_tokens;
  if (batch_sentences > 0) t.batch_sentences = batch_sentences;
  t.search = search_options();
  return t;
}

bool SearchOrigins::any_from_model() const {
  return beam == SettingOrigin::kModelFile || alpha == SettingOrigin::kModelFile ||
         normalization == SettingOrigin::kModelFile;
}

SearchOrigins apply_model_defaults(const DecodingDefaults& d, DecodingOptions& o, DecodingUse use,
                                   std::string* ignored) {
  SearchOrigins origins;
  const auto take = [](bool was_given, const auto& recommended, auto& value, SettingOrigin& origin) {
    if (was_given) {
      origin = SettingOrigin::kGiven;
    } else if (recommended) {
      value = *recommended;
      origin = SettingOrigin::kModelFile;
    }
  };
  std::optional<int> beam = d.beam;
  if (beam && *beam > max_beam(use)) {
    if (ignored != nullptr) {
      *ignored = "the model file's beam " + std::to_string(*beam) + " is above the largest this takes (" +
                 std::to_string(max_beam(use)) + ")";
    }
    beam.reset();
  }
  take(o.given.beam, beam, o.beam, origins.beam);
  take(o.given.alpha, d.alpha, o.length_penalty, origins.alpha);
  take(o.given.normalization, d.normalization, o.length_normalization, origins.normalization);
  return origins;
}

std::string describe_origins(const SearchOrigins& origins) {
  const auto from = [](SettingOrigin origin) {
    switch (origin) {
      case SettingOrigin::kModelFile: return "from the model file";
      case SettingOrigin::kGiven: return "given";
      case SettingOrigin::kDefault: break;
    }
    return "the default";
  };
  return std::string("beam ") + from(origins.beam) + ", length penalty " + from(origins.alpha) +
         ", length normalisation " + from(origins.normalization);
}

}  // namespace dragoman::decode
