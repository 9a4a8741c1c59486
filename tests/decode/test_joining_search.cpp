// BeamSearch with sentences joining and leaving a running search (serve's continuous batching):
// each sentence's n-best list is the one beam_search finds for it alone, whatever joined or left
// beside it and when: bit for bit with row-invariant products (f32 models), to rounding in f64;
// with learned and sinusoidal positions, recorded attention, an ensemble, and removed sentences
// never answered.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "base/error.h"
#include "decode/beam_search.h"
#include "decode/decode_testing.h"
#include "kernels/gemm.h"
#include "model/model_testing.h"

namespace dragoman::decode {
namespace {

const std::vector<std::vector<std::int32_t>> kSources = {
    {5, 6, 7}, {8}, {9, 10, 11, 12, 13}, {14, 5, 5, 6}, {7, 7}, {12, 11, 10, 9, 8, 7}, {6, 13}};

// The sentences joining at different steps, one removed while it searches; the finished ones by id.
std::map<std::int64_t, std::vector<Hypothesis>> joined(const DecodingModel& model, const SearchOptions& o) {
  BeamSearch search(model, o);
  std::map<std::int64_t, std::vector<Hypothesis>> results;
  const auto step = [&] {
    for (auto& [id, hypotheses] : search.step()) {
      REQUIRE(results.count(id) == 0);
      results[id] = std::move(hypotheses);
    }
  };
  search.add({kSources[0], kSources[1]}, {0, 1});
  step();
  step();
  search.add({kSources[2]}, {2});
  step();
  search.add({kSources[3], kSources[4], kSources[5]}, {3, 4, 5});
  search.remove([](std::int64_t id) { return id == 4; });
  step();
  search.add({kSources[6]}, {6});
  while (!search.empty()) step();
  // Joining an emptied search starts afresh.
  search.add({kSources[1]}, {7});
  while (!search.empty()) step();
  return results;
}

void check_alone(const DecodingModel& model, const SearchOptions& o, bool exact) {
  const std::map<std::int64_t, std::vector<Hypothesis>> results = joined(model, o);
  CHECK(results.count(4) == 0);  // removed
  REQUIRE(results.size() == kSources.size());
  for (const auto& [id, got] : results) {
    INFO("sentence " << id);
    const auto& source = kSources[static_cast<std::size_t>(id == 7 ? 1 : id)];
    const std::vector<Hypothesis> alone = beam_search(model, {source}, o)[0];
    REQUIRE(got.size() == alone.size());
    for (std::size_t j = 0; j < alone.size(); ++j) {
      CHECK(got[j].tokens == alone[j].tokens);
      if (exact) {
        CHECK(got[j].log_prob == alone[j].log_prob);
        CHECK(got[j].token_log_probs == alone[j].token_log_probs);
        CHECK(got[j].attention == alone[j].attention);
      } else {
        CHECK(got[j].log_prob == Approx(alone[j].log_prob).epsilon(1e-12));
        REQUIRE(got[j].attention.size() == alone[j].attention.size());
        for (std::size_t t = 0; t < alone[j].attention.size(); ++t) {
          REQUIRE(got[j].attention[t].size() == alone[j].attention[t].size());
          for (std::size_t s = 0; s < alone[j].attention[t].size(); ++s) {
            CHECK(got[j].attention[t][s] == Approx(alone[j].attention[t][s]).margin(1e-6));
          }
        }
      }
    }
  }
}

SearchOptions options(int beam, bool attention) {
  SearchOptions o;
  o.beam = beam;
  o.nbest = beam;
  o.max_length_b = 5;
  o.record_attention = attention;
  return o;
}

// f32 products that do not depend on the rows beside them, for the test's duration.
struct RowInvariant {
  RowInvariant() { cpu::set_row_invariant_products(true); }
  ~RowInvariant() { cpu::set_row_invariant_products(before); }
  RowInvariant(const RowInvariant&) = delete;
  RowInvariant& operator=(const RowInvariant&) = delete;
  bool before = cpu::row_invariant_products();
};

}  // namespace

TEST_CASE("a joining beam search finds what beam search finds for each sentence alone", "[decode]") {
  for (const std::string name : {"pre_untied_learned", "post_shared_tied"}) {
    for (const int beam : {1, 3}) {
      INFO(name << ", beam " << beam);
      const model::Transformer f64 = test::random_model(test::fixture_config(name), 21);
      check_alone(TransformerDecoding(f64), options(beam, beam == 3), false);
      const RowInvariant row_invariant;
      model::Transformer f32(test::fixture_config(name), DType::kF32);
      f32.initialize(21);
      check_alone(TransformerDecoding(f32), options(beam, beam == 3), true);
    }
  }
}

TEST_CASE("a joining beam search over an ensemble finds what beam search finds alone", "[decode]") {
  const model::Transformer a = test::random_model(test::fixture_config("post_shared_tied"), 3);
  const model::Transformer b = test::random_model(test::fixture_config("post_shared_tied"), 4);
  check_alone(EnsembleDecoding({&a, &b}, {"a", "b"}), options(2, true), false);
}

TEST_CASE("a joining beam search checks its arguments", "[decode]") {
  const model::Transformer model = test::random_model(test::fixture_config("post_shared_tied"), 3);
  const TransformerDecoding decoding(model);
  SearchOptions o = options(2, false);
  o.nbest = 3;
  CHECK_THROWS_AS(BeamSearch(decoding, o), Error);
  BeamSearch search(decoding, options(2, false));
  CHECK_THROWS_AS(search.add({{5}}, {}), Error);
  CHECK(search.step().empty());
  search.add({{5, 6}, {7}}, {10, 11});
  CHECK(search.sentences() == 2);
  CHECK(search.source_tokens() == 3);
  search.remove([](std::int64_t id) { return id == 10; });
  CHECK(search.sentences() == 1);
  CHECK(search.source_tokens() == 1);
  std::set<std::int64_t> answered;
  while (!search.empty()) {
    for (const auto& [id, hypotheses] : search.step()) answered.insert(id);
  }
  CHECK(answered == std::set<std::int64_t>{11});
  CHECK(search.source_tokens() == 0);
}

}  // namespace dragoman::decode
