// Beam search: beam 1 is greedy decoding; with a beam as large as the search space it finds the
// exhaustive-search optimum (and the exact n-best list) under each length normalisation; n-best
// lists are sorted and distinct; batching does not change the results.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <set>

#include "base/error.h"
#include "decode/beam_search.h"
#include "decode/decode_testing.h"
#include "model/model_testing.h"

namespace dragoman::decode {
namespace {

using test::random_model;
using test::sequence_log_prob;
using test::token_log_probs;

// Greedy decoding written out plainly: the most probable allowed token until EOS or max_length.
Hypothesis greedy(const model::Transformer& model, const std::vector<std::int32_t>& source, std::int64_t max_length) {
  const model::ModelConfig& c = model.config();
  const model::Batch batch = model::Batch::from_sentences({source}, {{}}, c);
  model::DecoderState state =
      model.start_decoding(model.encode(batch.src, batch.src_lengths), batch.src_lengths, max_length + 1);
  Hypothesis h;
  std::int32_t previous = c.bos_id;
  for (std::int64_t t = 0;; ++t) {
    const std::vector<double> logp =
        model.decode_step(state, Tensor::from_vector(std::vector<std::int32_t>{previous}, {1})).to_vector<double>();
    std::int32_t best = c.eos_id;
    if (t < max_length) {
      for (std::int32_t v = 0; v < c.tgt_vocab_size; ++v) {
        if (v == c.pad_id || v == c.bos_id) continue;
        if (logp[static_cast<std::size_t>(v)] > logp[static_cast<std::size_t>(best)]) best = v;
      }
    }
    h.log_prob += logp[static_cast<std::size_t>(best)];
    if (best == c.eos_id) return h;
    h.tokens.push_back(best);
    previous = best;
  }
}

}  // namespace

TEST_CASE("beam search with beam 1 is greedy decoding", "[decode]") {
  const model::Transformer model = random_model(test::fixture_config("post_shared_tied"), 3);
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6, 7}, {8}, {9, 10, 11, 12, 13}, {4, 4}};
  SearchOptions o;
  o.beam = 1;
  o.max_length_a = 1.0;
  o.max_length_b = 3;
  const auto results = beam_search(model, sources, o);
  REQUIRE(results.size() == sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    INFO("sentence " << i);
    const Hypothesis expected = greedy(model, sources[i], static_cast<std::int64_t>(sources[i].size()) + 3);
    REQUIRE(results[i].size() == 1);
    CHECK(results[i][0].tokens == expected.tokens);
    CHECK(results[i][0].log_prob == Approx(expected.log_prob).epsilon(1e-12));
  }
}

TEST_CASE("beam search with a beam as large as the search space is exhaustive search", "[decode]") {
  const model::Transformer model = random_model(test::small_vocab_config(), 11);
  const std::vector<std::int32_t> source = {4, 5, 6, 4};
  // Every output of at most 2 tokens from {unk, 4, 5, 6}: 1 + 4 + 16 = 21 hypotheses.
  const std::vector<std::int32_t> alphabet = {1, 4, 5, 6};
  std::vector<std::vector<std::int32_t>> space = {{}};
  for (const std::int32_t a : alphabet) {
    space.push_back({a});
    for (const std::int32_t b : alphabet) space.push_back({a, b});
  }
  std::vector<double> log_probs;
  for (const auto& y : space) log_probs.push_back(sequence_log_prob(model, source, y));

  std::vector<SearchOptions> settings(4);
  settings[0].length_penalty = LengthPenalty::kGnmt;
  settings[0].alpha = 0.6;
  settings[1].length_penalty = LengthPenalty::kPower;
  settings[1].alpha = 1.0;
  settings[2].length_penalty = LengthPenalty::kNone;
  settings[3].length_penalty = LengthPenalty::kNone;
  settings[3].word_reward = 0.8;
  for (std::size_t s = 0; s < settings.size(); ++s) {
    INFO("setting " << s);
    SearchOptions o = settings[s];
    o.max_length_a = 0;
    o.max_length_b = 2;
    o.beam = 21;
    // The exhaustive ranking.
    std::vector<Hypothesis> all;
    for (std::size_t i = 0; i < space.size(); ++i) {
      const std::int64_t length = static_cast<std::int64_t>(space[i].size()) + 1;
      all.push_back({space[i], log_probs[i], hypothesis_score(o, log_probs[i], length), {}, {}});
    }
    std::sort(all.begin(), all.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });

    o.nbest = 21;  // the whole space, in order
    const std::vector<Hypothesis> nbest = beam_search(model, {source}, o)[0];
    REQUIRE(nbest.size() == 21);
    std::set<std::vector<std::int32_t>> distinct;
    for (std::size_t i = 0; i < nbest.size(); ++i) {
      CHECK(nbest[i].tokens == all[i].tokens);
      CHECK(nbest[i].score == Approx(all[i].score).epsilon(1e-12));
      CHECK(nbest[i].log_prob == Approx(all[i].log_prob).epsilon(1e-12));
      if (i > 0) CHECK(nbest[i - 1].score >= nbest[i].score);
      distinct.insert(nbest[i].tokens);
    }
    CHECK(distinct.size() == 21);

    o.nbest = 1;  // with the early-stopping bound at work
    const std::vector<Hypothesis> best = beam_search(model, {source}, o)[0];
    REQUIRE(best.size() == 1);
    CHECK(best[0].tokens == all[0].tokens);
    CHECK(best[0].score == Approx(all[0].score).epsilon(1e-12));
  }
}

TEST_CASE("beam search: each hypothesis's token log-probabilities are the model's and add up to its own", "[decode]") {
  const model::Transformer model = random_model(test::fixture_config("post_shared_tied"), 5);
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6, 7}, {8}, {9, 10, 11, 12, 13}};
  SearchOptions o;
  o.beam = 4;
  o.nbest = 4;
  o.max_length_a = 1.0;
  o.max_length_b = 3;
  const auto results = beam_search(model, sources, o);
  REQUIRE(results.size() == sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    REQUIRE(!results[i].empty());
    for (const Hypothesis& h : results[i]) {
      INFO("sentence " << i << ", " << h.tokens.size() << " tokens");
      REQUIRE(h.token_log_probs.size() == h.tokens.size() + 1);  // the tokens, then EOS
      double sum = 0;
      for (const double lp : h.token_log_probs) sum += lp;
      CHECK(sum == h.log_prob);  // added in the search's order: the same bits
      const std::vector<double> expected = token_log_probs(model, sources[i], h.tokens);
      for (std::size_t t = 0; t < expected.size(); ++t) {
        CHECK(h.token_log_probs[t] <= 0.0);
        CHECK(h.token_log_probs[t] == Approx(expected[t]).epsilon(1e-12).margin(1e-12));
      }
    }
  }
}

TEST_CASE("beam search: n-best lists are sorted and distinct, and batching changes nothing", "[decode]") {
  const model::Transformer model = random_model(test::fixture_config("pre_untied_learned"), 9);
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6, 7}, {8}, {9, 10, 11, 12, 13}};
  SearchOptions o;
  o.beam = 5;
  o.nbest = 5;
  o.max_length_b = 4;
  const auto together = beam_search(model, sources, o);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    INFO("sentence " << i);
    const auto alone = beam_search(model, {sources[i]}, o)[0];
    REQUIRE(together[i].size() == alone.size());
    REQUIRE(!alone.empty());
    std::set<std::vector<std::int32_t>> distinct;
    for (std::size_t j = 0; j < alone.size(); ++j) {
      CHECK(together[i][j].tokens == alone[j].tokens);
      CHECK(together[i][j].score == Approx(alone[j].score).epsilon(1e-12));
      if (j > 0) CHECK(alone[j - 1].score >= alone[j].score);
      distinct.insert(alone[j].tokens);
      CHECK(static_cast<std::int64_t>(alone[j].tokens.size()) <= static_cast<std::int64_t>(sources[i].size()) + 4);
      // The reported log-probability is the model's.
      CHECK(alone[j].log_prob == Approx(sequence_log_prob(model, sources[i], alone[j].tokens)).epsilon(1e-12));
    }
    CHECK(distinct.size() == alone.size());
  }
  o.nbest = 6;
  CHECK_THROWS_AS(beam_search(model, sources, o), Error);
}

}  // namespace dragoman::decode
