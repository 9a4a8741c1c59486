// Decoding with an ensemble and with recorded cross-attention (decode/decoding_model.h): an ensemble
// of a model with itself decodes exactly as the model alone; an ensemble of two different models
// steps with the average of their log-probabilities, and its hypotheses' log-probabilities are the
// averages of the models'; members with other vocabularies are refused by name; the recorded
// attention is each step's probabilities over the source, one row per token and EOS, of the
// chosen layer and head (the average of the heads by default).
#include <catch2/catch.hpp>

#include <cmath>

#include "base/error.h"
#include "decode/beam_search.h"
#include "decode/decode_testing.h"
#include "decode/decoding_model.h"
#include "model/model_testing.h"

namespace dragoman::decode {
namespace {

using test::random_model;
using test::sequence_log_prob;

const std::vector<std::vector<std::int32_t>> kSources = {{5, 6, 7}, {8}, {9, 10, 11, 12, 13}, {4, 4}};

SearchOptions search(int beam, int nbest) {
  SearchOptions o;
  o.beam = beam;
  o.nbest = nbest;
  o.max_length_a = 1.0;
  o.max_length_b = 3;
  return o;
}

}  // namespace

TEST_CASE("an ensemble of a model with itself decodes as the model alone", "[decode]") {
  const model::Transformer model = random_model(test::fixture_config("pre_untied_learned"), 7);
  const EnsembleDecoding twice({&model, &model}, {"a.safetensors", "a.safetensors"});
  for (const bool attention : {false, true}) {
    SearchOptions o = search(4, 4);
    o.record_attention = attention;
    const auto alone = beam_search(model, kSources, o);
    const auto together = beam_search(twice, kSources, o);
    REQUIRE(alone.size() == together.size());
    for (std::size_t i = 0; i < alone.size(); ++i) {
      REQUIRE(alone[i].size() == together[i].size());
      for (std::size_t j = 0; j < alone[i].size(); ++j) {
        INFO("sentence " << i << ", hypothesis " << j << ", attention " << attention);
        CHECK(together[i][j].tokens == alone[i][j].tokens);
        CHECK(together[i][j].log_prob == alone[i][j].log_prob);  // bit for bit: (x + x) / 2 == x
        CHECK(together[i][j].score == alone[i][j].score);
        CHECK(together[i][j].token_log_probs == alone[i][j].token_log_probs);
        CHECK(together[i][j].attention == alone[i][j].attention);
        CHECK(alone[i][j].attention.size() == (attention ? alone[i][j].tokens.size() + 1 : 0));
      }
    }
  }
}

TEST_CASE("an ensemble of two models averages their log-probabilities", "[decode]") {
  const model::Transformer a = random_model(test::fixture_config("pre_untied_learned"), 3);
  model::ModelConfig bigger = test::fixture_config("pre_untied_learned");
  bigger.decoder_layers += 1;  // another size and depth, the same vocabulary
  bigger.d_ff *= 2;
  const model::Transformer b = random_model(bigger, 4);
  const EnsembleDecoding ensemble({&a, &b}, {"a", "b"});
  CHECK(ensemble.size() == 2);

  // One step: the average of the two models' log-probabilities.
  const model::Batch batch = model::Batch::from_sentences({kSources[0]}, {{}}, a.config());
  DecodingState state = ensemble.start(batch, 4, 1, nullptr);
  const Tensor bos = Tensor::from_vector(std::vector<std::int32_t>{a.config().bos_id}, {1});
  const std::vector<double> averaged = ensemble.step(state, bos).to_vector<double>();
  auto first_step = [&](const model::Transformer& m) {
    model::DecoderState s = m.start_decoding(m.encode(batch.src, batch.src_lengths), batch.src_lengths, 4);
    return m.decode_step(s, bos).to_vector<double>();
  };
  const std::vector<double> pa = first_step(a), pb = first_step(b);
  REQUIRE(averaged.size() == pa.size());
  for (std::size_t v = 0; v < pa.size(); ++v) CHECK(averaged[v] == Approx((pa[v] + pb[v]) / 2).epsilon(1e-14));

  // Whole searches: each hypothesis's log-probability is the average of the models' of it.
  const auto results = beam_search(ensemble, kSources, search(3, 3));
  for (std::size_t i = 0; i < kSources.size(); ++i) {
    REQUIRE(!results[i].empty());
    for (const Hypothesis& h : results[i]) {
      const double expected =
          (sequence_log_prob(a, kSources[i], h.tokens) + sequence_log_prob(b, kSources[i], h.tokens)) / 2;
      CHECK(h.log_prob == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("an ensemble refuses models of other vocabularies, naming both", "[decode]") {
  const model::Transformer a = random_model(test::fixture_config("pre_untied_learned"), 3);
  model::ModelConfig other = test::fixture_config("pre_untied_learned");
  other.tgt_vocab_size += 1;
  other.src_vocab_size += 1;
  const model::Transformer b = random_model(other, 4);
  CHECK_THROWS_WITH(EnsembleDecoding({&a, &b}, {"first.safetensors", "second.safetensors"}),
                    Catch::Matchers::Contains("first.safetensors and second.safetensors differ in vocabulary size"));
  CHECK_THROWS_AS(EnsembleDecoding({}, {}), Error);
}

TEST_CASE("recorded cross-attention: one row per token and EOS over the source, of the chosen layer and head",
          "[decode]") {
  model::ModelConfig config = test::fixture_config("pre_untied_learned");
  config.decoder_layers = 2;
  const model::Transformer model = random_model(config, 8);
  SearchOptions o = search(4, 2);
  o.record_attention = true;
  const auto averaged = beam_search(model, kSources, o);
  for (std::size_t i = 0; i < kSources.size(); ++i) {
    for (const Hypothesis& h : averaged[i]) {
      REQUIRE(h.attention.size() == h.tokens.size() + 1);
      for (const auto& row : h.attention) {
        REQUIRE(row.size() == kSources[i].size());
        double sum = 0;
        for (const float p : row) {
          CHECK(p >= 0.0f);
          sum += p;
        }
        CHECK(sum == Approx(1.0).margin(1e-5));
      }
    }
  }
  // The average of the heads is the mean of each head's attention (the same hypotheses: the
  // attention does not change the search).
  std::vector<std::vector<std::vector<Hypothesis>>> per_head;
  for (std::int64_t head = 0; head < config.heads; ++head) {
    o.attention.head = head;
    per_head.push_back(beam_search(model, kSources, o));
  }
  for (std::size_t i = 0; i < kSources.size(); ++i) {
    for (std::size_t j = 0; j < averaged[i].size(); ++j) {
      const Hypothesis& h = averaged[i][j];
      for (std::size_t t = 0; t < h.attention.size(); ++t) {
        for (std::size_t s = 0; s < kSources[i].size(); ++s) {
          double mean = 0;
          for (const auto& results : per_head) {
            REQUIRE(results[i][j].tokens == h.tokens);
            mean += results[i][j].attention[t][s];
          }
          CHECK(h.attention[t][s] == Approx(mean / static_cast<double>(config.heads)).margin(1e-6));
        }
      }
    }
  }
  // The first layer's attention differs from the last's (the default); a layer or head that does
  // not exist is refused.
  o.attention = {0, -1};
  const auto first_layer = beam_search(model, kSources, o);
  CHECK(first_layer[2][0].attention != averaged[2][0].attention);
  o.attention = {2, -1};
  CHECK_THROWS_WITH(beam_search(model, kSources, o), Catch::Matchers::Contains("layer 3 of a decoder of 2 layers"));
  o.attention = {-1, config.heads};
  CHECK_THROWS_AS(beam_search(model, kSources, o), Error);
}

}  // namespace dragoman::decode
