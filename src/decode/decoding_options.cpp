// The decoding options shared by translate, serve and score (see decoding_options.h).
#include "decode/decoding_options.h"

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

bool apply_model_defaults(const DecodingDefaults& d, DecodingOptions& o) {
  bool applied = false;
  const auto take = [&applied](bool was_given, const auto& recommended, auto& value) {
    if (was_given || !recommended) return;
    value = *recommended;
    applied = true;
  };
  take(o.given.beam, d.beam, o.beam);
  take(o.given.alpha, d.alpha, o.length_penalty);
  take(o.given.normalization, d.normalization, o.length_normalization);
  return applied;
}

}  // namespace dragoman::decode
