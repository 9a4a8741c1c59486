// Target prefixes: the output starts with the prefix's tokens, its log-probabilities (prefix
// included) are the model's, an empty prefix changes nothing, forcing what greedy decoding would
// write anyway gives greedy decoding's output, sampling keeps the prefix too, and a prefix that
// cannot be an output is refused.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "decode/beam_search.h"
#include "decode/decode_testing.h"
#include "model/model_testing.h"

namespace dragoman::decode {

TEST_CASE("target prefix: the outputs start with it and their scores are the model's", "[decode]") {
  const model::Transformer model = test::random_model(test::fixture_config("pre_untied_learned"), 9);
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6, 7}, {8}, {9, 10, 11, 12, 13}};
  const std::vector<TargetGuide> prefixes = {{{10, 11}, {}}, {}, {{7, 7, 7, 7, 7, 7, 7, 7, 7}, {}}};
  for (const bool sampling : {false, true}) {
    SearchOptions o;
    o.beam = o.nbest = 4;
    o.max_length_b = 3;
    o.sampling.enabled = sampling;
    INFO((sampling ? "sampling" : "beam search"));
    const auto out = beam_search(model, sources, o, &prefixes);
    const auto plain = beam_search(model, sources, o);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      // (The third's prefix fills its length cap: EOS must follow it, one output.)
      REQUIRE(out[i].size() == (i == 2 && !sampling ? 1u : 4u));
      for (const Hypothesis& h : out[i]) {
        const std::vector<std::int32_t>& prefix = prefixes[i].prefix;
        REQUIRE(h.tokens.size() >= prefix.size());
        CHECK(std::equal(prefix.begin(), prefix.end(), h.tokens.begin()));
        // The length cap is at least the prefix (the third's 9 tokens over its 5 + 3).
        CHECK(h.tokens.size() <= std::max<std::size_t>(sources[i].size() + 3, prefix.size()));
        CHECK(h.log_prob == Approx(test::sequence_log_prob(model, sources[i], h.tokens)).epsilon(1e-12));
        CHECK(h.token_log_probs.size() == h.tokens.size() + 1);
      }
      if (prefixes[i].empty()) {  // an empty prefix: the search without one
        for (std::size_t j = 0; j < out[i].size(); ++j) CHECK(out[i][j].tokens == plain[i][j].tokens);
      }
    }
  }
}

TEST_CASE("target prefix: forcing greedy decoding's own first tokens gives its output", "[decode]") {
  const model::Transformer model = test::random_model(test::fixture_config("pre_untied_learned"), 4);
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6, 7, 8}, {9, 10}};
  SearchOptions greedy;
  greedy.beam = 1;
  greedy.max_length_b = 6;
  const auto free_run = beam_search(model, sources, greedy);
  std::vector<TargetGuide> prefixes;
  for (const auto& n : free_run) {
    prefixes.push_back(
        {{n[0].tokens.begin(), n[0].tokens.begin() + std::min<std::ptrdiff_t>(2, n[0].tokens.size())}, {}});
  }
  const auto forced = beam_search(model, sources, greedy, &prefixes);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    CHECK(forced[i][0].tokens == free_run[i][0].tokens);
    CHECK(forced[i][0].log_prob == Approx(free_run[i][0].log_prob).epsilon(1e-12));
  }
}

TEST_CASE("target prefix: tokens no output holds, a prefix beyond the positions, a count per source", "[decode]") {
  const model::Transformer model = test::random_model(test::fixture_config("pre_untied_learned"), 4);
  const model::ModelConfig& c = model.config();
  SearchOptions o;
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6}};
  for (const std::int32_t bad : {c.eos_id, c.bos_id, c.pad_id, static_cast<std::int32_t>(c.tgt_vocab_size)}) {
    const std::vector<TargetGuide> prefixes = {{{5, bad}, {}}};
    CHECK_THROWS_WITH(beam_search(model, sources, o, &prefixes), Catch::Contains("which no output holds"));
  }
  const std::vector<TargetGuide> long_prefix = {
      {std::vector<std::int32_t>(static_cast<std::size_t>(c.max_positions), 5), {}}};
  CHECK_THROWS_WITH(beam_search(model, sources, o, &long_prefix), Catch::Contains("do not fit the model's"));
  const std::vector<TargetGuide> two = {{{5}, {}}, {{6}, {}}};
  CHECK_THROWS_WITH(beam_search(model, sources, o, &two), Catch::Contains("one guide per source"));
}

}  // namespace dragoman::decode
