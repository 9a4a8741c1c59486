// Batch translation (DESIGN.md "Decoding"): sentences of text -> SentencePiece ids -> sorted by
// length and packed into batches of at most `batch_tokens` source tokens (padding counted) ->
// beam search -> detokenized text, returned in input order. Results do not depend on how the
// input is batched.
//
// Edge cases: an empty line (or one SentencePiece turns into no tokens) gives an empty
// translation without running the model; a line longer than the model's positions is cut to
// max_positions tokens and reported as truncated.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "decode/beam_search.h"
#include "model/transformer.h"
#include "text/vocabulary.h"

namespace dragoman {

struct TranslatorOptions {
  SearchOptions search;
  std::int64_t batch_tokens = 2048;  // source tokens per batch, padding counted (at least one sentence)
  // Sentences per batch: the decoder's log-probabilities are [sentences x beam, V] floats, which
  // for short sentences would otherwise dwarf everything else (1,000 x 4 x 37,000 = 592 MB), and
  // so would the self-attention caches (rows x length x d_model x 2 x layers).
  std::int64_t batch_sentences = 64;
};

struct TranslatedHypothesis {
  std::string text;
  std::vector<std::int32_t> tokens;  // target ids, without BOS/EOS
  double log_prob = 0;               // log p(tokens, EOS | source)
  double score = 0;                  // length-normalised (beam_search.h)
};

struct Translation {
  std::vector<TranslatedHypothesis> nbest;  // best first; one empty hypothesis for an empty input
  std::int64_t source_tokens = 0;           // after truncation
  bool truncated = false;
};

class Translator {
 public:
  // The model and vocabulary must outlive the translator.
  Translator(const Transformer& model, const Vocabulary& vocabulary, TranslatorOptions options);

  // Translates `lines` (valid UTF-8, without line ends), results in input order. `progress`, if
  // given, is called after each batch with the number of lines finished so far (empty lines count
  // at once); an exception it throws stops the translation.
  std::vector<Translation> translate(const std::vector<std::string>& lines,
                                     const std::function<void(std::int64_t done)>& progress = {}) const;
  // The same for sentences already encoded (source ids without BOS/EOS; training's dev set).
  std::vector<Translation> translate_ids(std::vector<std::vector<std::int32_t>> sources,
                                         const std::function<void(std::int64_t done)>& progress = {}) const;

  const TranslatorOptions& options() const { return options_; }

 private:
  const Transformer& model_;
  const Vocabulary& vocabulary_;
  TranslatorOptions options_;
};

// The batches of sentences of these lengths (indices into `lengths`, zero lengths left out): sorted
// longest first (ties by index), each at most `batch_tokens` = count x longest and at most
// `batch_sentences` sentences, at least one.
std::vector<std::vector<std::int64_t>> length_sorted_batches(const std::vector<std::int64_t>& lengths,
                                                             std::int64_t batch_tokens,
                                                             std::int64_t batch_sentences = 1 << 30);

}  // namespace dragoman
