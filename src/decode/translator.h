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
#include <memory>
#include <string>
#include <vector>

#include "decode/beam_search.h"
#include "decode/decoding_options.h"
#include "decode/output_noise.h"
#include "device/device.h"
#include "model/transformer.h"
#include "text/vocabulary.h"

namespace dragoman::decode {

// The batch sizes' defaults are decoding_options.h's, where they are said why.
struct TranslatorOptions {
  SearchOptions search;
  // Source tokens per batch, padding counted (at least one sentence).
  std::int64_t batch_tokens = kCpuBatchTokens;
  // Sentences per batch: the decoder's log-probabilities are [sentences x beam, V] floats, which
  // for short sentences would otherwise dwarf everything else (1,000 x 4 x 37,000 = 592 MB), and
  // so would the self-attention caches (rows x length x d_model x 2 x layers).
  std::int64_t batch_sentences = kCpuBatchSentences;
  // Noise on each hypothesis's text (back-translation's "beam + noise"); its tokens and scores stay
  // the search's.
  NoiseOptions noise;

  // The defaults for a device: these on the CPU, kGpuBatchTokens and kGpuBatchSentences on a GPU.
  static TranslatorOptions for_device(const Device& device) {
    TranslatorOptions o;
    if (!device.is_cpu()) {
      o.batch_tokens = kGpuBatchTokens;
      o.batch_sentences = kGpuBatchSentences;
    }
    return o;
  }
};

struct TranslatedHypothesis {
  std::string text;
  std::vector<std::int32_t> tokens;           // target ids, without BOS/EOS
  double log_prob = 0;                        // log p(tokens, EOS | source): the model's score, unnormalised
  double score = 0;                           // length-normalised, word reward included (beam_search.h)
  std::vector<double> token_log_probs;        // each token's log-probability, then EOS's (beam_search.h)
  std::vector<std::vector<float>> attention;  // with search.record_attention: each token's, then EOS's
};

struct Translation {
  std::vector<TranslatedHypothesis> nbest;  // best first; one empty hypothesis for an empty input
  std::int64_t source_tokens = 0;           // after truncation
  bool truncated = false;
};

class Translator {
 public:
  // The model (one, or an ensemble) and the vocabulary must outlive the translator.
  Translator(const DecodingModel& model, const text::Vocabulary& vocabulary, TranslatorOptions options);
  Translator(const model::Transformer& model, const text::Vocabulary& vocabulary, TranslatorOptions options);

  // Translates `lines` (valid UTF-8, without line ends), results in input order. `progress`, if
  // given, is called after each batch with the number of lines finished so far (empty lines count
  // at once); an exception it throws stops the translation.
  std::vector<Translation> translate(const std::vector<std::string>& lines,
                                     const std::function<void(std::int64_t done)>& progress = {}) const;
  // The same for sentences already encoded (source ids without BOS/EOS; training's dev set).
  std::vector<Translation> translate_ids(std::vector<std::vector<std::int32_t>> sources,
                                         const std::function<void(std::int64_t done)>& progress = {}) const;

  // Called after each batch with the results so far, in input order (a line not translated yet
  // has an empty n-best list), and the number of lines finished; so a caller can write the lines
  // that are done, or keep them when it stops (an exception it throws stops the translation).
  using BatchDone = std::function<void(const std::vector<Translation>& results, std::int64_t done)>;
  // translate() calling `batch_done` (which must be callable) after each batch.
  std::vector<Translation> translate_in_batches(const std::vector<std::string>& lines,
                                                const BatchDone& batch_done) const;
  // translate_ids() calling `batch_done` after each batch (sources from encode(): translate's
  // reader thread encodes the next lines while this decodes). `guides`: none, or one per source
  // (its target prefix and constraints; an empty source's translation stays empty).
  std::vector<Translation> translate_ids_in_batches(std::vector<std::vector<std::int32_t>> sources,
                                                    const BatchDone& batch_done,
                                                    std::vector<TargetGuide> guides = {}) const;
  // The source ids of `lines`, as translate() makes them; safe to call on another thread while a
  // translation runs.
  std::vector<std::vector<std::int32_t>> encode(const std::vector<std::string>& lines) const;

  const TranslatorOptions& options() const { return options_; }
  const text::Vocabulary& vocabulary() const { return vocabulary_; }

 private:
  std::unique_ptr<TransformerDecoding> one_model_;  // when constructed with one Transformer
  const DecodingModel& model_;
  const text::Vocabulary& vocabulary_;
  TranslatorOptions options_;

  std::vector<Translation> search(std::vector<std::vector<std::int32_t>> sources, const BatchDone& batch_done,
                                  std::vector<TargetGuide> guides = {}) const;
  void check() const;  // the vocabulary against the model, the options
};

// A source as translate and serve take it: cut to the model's `max_positions` tokens (reported as
// truncated); the result's source_tokens set, and an empty source's one empty hypothesis (nothing
// to search).
Translation prepare_source(std::vector<std::int32_t>& source, std::int64_t max_positions);

// The n-best list of a Translation: each hypothesis with its text (decoded by `vocabulary`).
std::vector<TranslatedHypothesis> translated(const text::Vocabulary& vocabulary, const std::vector<Hypothesis>& found);

// The batches of sentences of these lengths (indices into `lengths`, zero lengths left out): sorted
// longest first (ties by index), each at most `batch_tokens` = count x longest and at most
// `batch_sentences` sentences, at least one.
std::vector<std::vector<std::int64_t>> length_sorted_batches(const std::vector<std::int64_t>& lengths,
                                                             std::int64_t batch_tokens,
                                                             std::int64_t batch_sentences = 1 << 30);

}  // namespace dragoman::decode
