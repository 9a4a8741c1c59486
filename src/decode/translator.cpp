// Batch translation (see translator.h).
#include "decode/translator.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace dragoman::decode {

std::vector<std::vector<std::int64_t>> length_sorted_batches(const std::vector<std::int64_t>& lengths,
                                                             std::int64_t batch_tokens, std::int64_t batch_sentences) {
  if (batch_tokens < 1) throw Error("translate: the batch size in tokens must be >= 1");
  if (batch_sentences < 1) throw Error("translate: the batch size in sentences must be >= 1");
  std::vector<std::int64_t> order;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] > 0) order.push_back(static_cast<std::int64_t>(i));
  }
  // Longest first: the largest batch comes first, so running out of memory shows at once.
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return lengths[a] > lengths[b]; });
  std::vector<std::vector<std::int64_t>> batches;
  for (const std::int64_t i : order) {
    if (batches.empty() || static_cast<std::int64_t>(batches.back().size()) >= batch_sentences ||
        static_cast<std::int64_t>(batches.back().size() + 1) * lengths[batches.back().front()] > batch_tokens) {
      batches.emplace_back();
    }
    batches.back().push_back(i);
  }
  return batches;
}

Translation prepare_source(std::vector<std::int32_t>& source, std::int64_t max_positions) {
  Translation t;
  if (static_cast<std::int64_t>(source.size()) > max_positions) {
    source.resize(static_cast<std::size_t>(max_positions));
    t.truncated = true;
  }
  t.source_tokens = static_cast<std::int64_t>(source.size());
  if (source.empty()) t.nbest.emplace_back();  // nothing to translate: an empty translation
  return t;
}

std::vector<TranslatedHypothesis> translated(const text::Vocabulary& vocabulary, const std::vector<Hypothesis>& found) {
  std::vector<TranslatedHypothesis> nbest;
  for (const Hypothesis& h : found) {
    nbest.push_back({vocabulary.decode(h.tokens), h.tokens, h.log_prob, h.score, h.token_log_probs, h.attention});
  }
  return nbest;
}

Translator::Translator(const model::Transformer& model, const text::Vocabulary& vocabulary, TranslatorOptions options)
    : one_model_(std::make_unique<TransformerDecoding>(model)),
      model_(*one_model_),
      vocabulary_(vocabulary),
      options_(std::move(options)) {
  check();
}

Translator::Translator(const DecodingModel& model, const text::Vocabulary& vocabulary, TranslatorOptions options)
    : model_(model), vocabulary_(vocabulary), options_(std::move(options)) {
  check();
}

void Translator::check() const {
  const model::ModelConfig& c = model_.config();
  if (vocabulary_.size() != c.src_vocab_size || vocabulary_.target_size() != c.tgt_vocab_size) {
    throw Error("translate: the vocabulary has " + std::to_string(vocabulary_.size()) + " (source) and " +
                std::to_string(vocabulary_.target_size()) + " (target) pieces but the model's vocabularies have " +
                std::to_string(c.src_vocab_size) + " and " + std::to_string(c.tgt_vocab_size));
  }
  if (options_.search.beam < 1) throw Error("translate: the beam must be >= 1");
  if (options_.search.nbest < 1 || options_.search.nbest > options_.search.beam) {
    throw Error("translate: n-best " + std::to_string(options_.search.nbest) + " must be in [1, beam " +
                std::to_string(options_.search.beam) + "]");
  }
  if (options_.batch_tokens < 1) throw Error("translate: the batch size in tokens must be >= 1");
  if (options_.batch_sentences < 1) throw Error("translate: the batch size in sentences must be >= 1");
}

namespace {

std::vector<std::vector<std::int32_t>> encode_lines(const text::Vocabulary& vocabulary,
                                                    const std::vector<std::string>& lines) {
  std::vector<std::vector<std::int32_t>> sources;
  sources.reserve(lines.size());
  for (const std::string& line : lines) sources.push_back(vocabulary.encode(line));
  return sources;
}

// A BatchDone that reports only the count to `progress` (if any).
Translator::BatchDone count_only(const std::function<void(std::int64_t)>& progress) {
  return [&progress](const std::vector<Translation>&, std::int64_t done) {
    if (progress) progress(done);
  };
}

}  // namespace

std::vector<Translation> Translator::translate(const std::vector<std::string>& lines,
                                               const std::function<void(std::int64_t)>& progress) const {
  return search(encode_lines(vocabulary_, lines), count_only(progress));
}

std::vector<Translation> Translator::translate_in_batches(const std::vector<std::string>& lines,
                                                          const BatchDone& batch_done) const {
  return search(encode_lines(vocabulary_, lines), batch_done);
}

std::vector<Translation> Translator::translate_ids_in_batches(std::vector<std::vector<std::int32_t>> sources,
                                                              const BatchDone& batch_done,
                                                              std::vector<TargetGuide> guides) const {
  return search(std::move(sources), batch_done, std::move(guides));
}

std::vector<std::vector<std::int32_t>> Translator::encode(const std::vector<std::string>& lines) const {
  return encode_lines(vocabulary_, lines);
}

std::vector<Translation> Translator::translate_ids(std::vector<std::vector<std::int32_t>> sources,
                                                   const std::function<void(std::int64_t)>& progress) const {
  return search(std::move(sources), count_only(progress));
}

std::vector<Translation> Translator::search(std::vector<std::vector<std::int32_t>> sources, const BatchDone& batch_done,
                                            std::vector<TargetGuide> guides) const {
  if (!guides.empty() && guides.size() != sources.size()) throw Error("translate: one guide per source");
  const std::int64_t max_positions = model_.config().max_positions;
  std::vector<Translation> results(sources.size());
  std::vector<std::int64_t> lengths(sources.size());
  std::int64_t done = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    results[i] = prepare_source(sources[i], max_positions);
    lengths[i] = results[i].source_tokens;
    if (lengths[i] == 0) ++done;
  }
  const std::vector<std::vector<std::int64_t>> batches =
      length_sorted_batches(lengths, options_.batch_tokens, options_.batch_sentences);
  if (batches.empty()) batch_done(results, done);
  for (const std::vector<std::int64_t>& batch : batches) {
    std::vector<std::vector<std::int32_t>> batch_sources;
    std::vector<TargetGuide> batch_guides;
    for (const std::int64_t i : batch) {
      batch_sources.push_back(std::move(sources[static_cast<std::size_t>(i)]));
      if (!guides.empty()) batch_guides.push_back(std::move(guides[static_cast<std::size_t>(i)]));
    }
    const std::vector<std::vector<Hypothesis>> found =
        beam_search(model_, batch_sources, options_.search, guides.empty() ? nullptr : &batch_guides);
    for (std::size_t j = 0; j < batch.size(); ++j) {
      std::vector<TranslatedHypothesis>& nbest = results[static_cast<std::size_t>(batch[j])].nbest;
      nbest = translated(vocabulary_, found[j]);
      if (!options_.noise.enabled) continue;
      const std::uint64_t key = sampling_key(batch_sources[j]);
      for (std::size_t r = 0; r < nbest.size(); ++r) {
        nbest[r].text = add_noise(nbest[r].text, options_.noise, key, static_cast<std::int64_t>(r));
      }
    }
    done += static_cast<std::int64_t>(batch.size());
    batch_done(results, done);
  }
  return results;
}

}  // namespace dragoman::decode
