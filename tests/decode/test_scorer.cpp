// Force decoding (decode/scorer.h): each pair's token log-probabilities are the model's (fed token
// by token, decode_testing.h), whatever the pair is batched with and however long the targets in
// its batch are (empty ones included); beam search's hypotheses score as beam search scored them;
// bad arguments are named.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "decode/beam_search.h"
#include "decode/decode_testing.h"
#include "decode/scorer.h"
#include "model/model_testing.h"

namespace dragoman::decode {

TEST_CASE("force decoding gives each target's token log-probabilities, batched or not", "[decode]") {
  const model::Transformer model = test::random_model(test::fixture_config("pre_untied_learned"), 13);
  const TransformerDecoding decoding(model);
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6, 7}, {8}, {9, 10, 11, 12, 13}, {7, 7}};
  const std::vector<std::vector<std::int32_t>> targets = {{4, 5, 6, 7, 8}, {}, {9, 9}, {10}};
  for (const std::int64_t batch_sentences : {std::int64_t{1}, std::int64_t{64}}) {
    INFO("batches of " << batch_sentences);
    const std::vector<ForcedScore> scores = force_decode(decoding, sources, targets, 2048, batch_sentences);
    REQUIRE(scores.size() == sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) {
      INFO("pair " << i);
      const std::vector<double> want = test::token_log_probs(model, sources[i], targets[i]);
      REQUIRE(scores[i].token_log_probs.size() == want.size());
      double sum = 0;
      for (std::size_t t = 0; t < want.size(); ++t) {
        CHECK(scores[i].token_log_probs[t] == Approx(want[t]).epsilon(1e-12));
        sum += scores[i].token_log_probs[t];
      }
      CHECK(scores[i].log_prob == sum);  // added in order from 0
    }
  }
}

TEST_CASE("force decoding scores beam search's hypotheses as beam search did", "[decode]") {
  const model::Transformer model = test::random_model(test::fixture_config("post_shared_tied"), 17);
  const TransformerDecoding decoding(model);
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6, 7}, {8, 9}, {9, 10, 11, 12, 13}};
  SearchOptions o;
  o.beam = 3;
  o.max_length_b = 6;
  const auto found = beam_search(decoding, sources, o);
  std::vector<std::vector<std::int32_t>> targets;
  for (const auto& hypotheses : found) targets.push_back(hypotheses.front().tokens);
  const std::vector<ForcedScore> scores = force_decode(decoding, sources, targets, 2048, 64);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    INFO("sentence " << i);
    CHECK(scores[i].log_prob == Approx(found[i].front().log_prob).epsilon(1e-12));
    REQUIRE(scores[i].token_log_probs.size() == found[i].front().token_log_probs.size());
  }
}

TEST_CASE("force decoding names what it cannot score", "[decode]") {
  const model::Transformer model = test::random_model(test::fixture_config("post_shared_tied"), 17);
  const TransformerDecoding decoding(model);
  CHECK_THROWS_WITH(force_decode(decoding, {{5}}, {}, 2048, 64), Catch::Contains("one target per source"));
  CHECK_THROWS_WITH(force_decode(decoding, {{5}, {}}, {{5}, {6}}, 2048, 64), Catch::Contains("source 2 is empty"));
  const std::vector<std::int32_t> too_long(static_cast<std::size_t>(model.config().max_positions), 5);
  CHECK_THROWS_WITH(force_decode(decoding, {{5}}, {too_long}, 2048, 64), Catch::Contains("longer than the model's"));
}

}  // namespace dragoman::decode
