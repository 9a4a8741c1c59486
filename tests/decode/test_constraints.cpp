// Lexically constrained search: constraint progress on literal examples, dynamic beam allocation's
// choice, and the search's guarantee (every output holds every constraint, with the model's
// log-probabilities), whatever the beam, with a prefix, with constraints that share tokens or
// need a longer output than the length cap, beside unconstrained sentences that stay bit for bit
// the plain search's.
#include <catch2/catch.hpp>

#include <algorithm>

#include "base/error.h"
#include "decode/beam_search.h"
#include "decode/constraints.h"
#include "decode/decode_testing.h"
#include "model/model_testing.h"

namespace dragoman::decode {
namespace {

using Phrases = std::vector<std::vector<std::int32_t>>;

ConstraintState after(const Phrases& constraints, const std::vector<std::int32_t>& tokens) {
  ConstraintState state = start_constraints(constraints);
  for (const std::int32_t token : tokens) state = advance(state, constraints, token);
  return state;
}

// Whether `phrase` occurs in `tokens` as a contiguous span.
bool contains(const std::vector<std::int32_t>& tokens, const std::vector<std::int32_t>& phrase) {
  return std::search(tokens.begin(), tokens.end(), phrase.begin(), phrase.end()) != tokens.end();
}

}  // namespace

TEST_CASE("constraints: progress over an output", "[decode]") {
  const Phrases ab = {{1, 2}};
  CHECK(after(ab, {}).remaining == 2);
  CHECK(after(ab, {1}).remaining == 1);
  CHECK(after(ab, {1, 2}).met == std::vector<std::uint8_t>{1});
  CHECK(after(ab, {1, 2}).remaining == 0);
  CHECK(after(ab, {1, 1, 2}).remaining == 0);  // the second 1 starts it again
  CHECK(after(ab, {1, 3, 2}).remaining == 2);  // broken: owed again
  CHECK(after(ab, {1, 2, 1}).remaining == 0);  // met stays met
  // Two constraints sharing a first token: the tail that begins either counts.
  const Phrases shared = {{1, 2}, {1, 3}};
  const ConstraintState s13 = after(shared, {1, 3});
  CHECK(s13.met == std::vector<std::uint8_t>{0, 1});
  CHECK(s13.remaining == 2);
  // Overlapping text, spans of their own: 1 2 3 meets only the first; 1 2 2 3 both.
  const Phrases overlap = {{1, 2}, {2, 3}};
  CHECK(after(overlap, {1, 2, 3}).remaining == 2);
  CHECK(after(overlap, {1, 2, 2, 3}).remaining == 0);
  // A longer tail restarts inside a broken one: 1 1 1 2 meets 1 1 2.
  CHECK(after({{1, 1, 2}}, {1, 1, 1, 2}).remaining == 0);

  std::vector<std::int32_t> next;
  advancing_tokens(after(shared, {1}), shared, next);
  CHECK(next == std::vector<std::int32_t>{2, 1, 1});  // the one in progress, then both first tokens
}

TEST_CASE("constraints: dynamic beam allocation", "[decode]") {
  // 3 banks (2 constraint tokens), 4 slots: one each, the spare one to the fullest bank.
  CHECK(allocate_banks({0, 0, 0, 1, 2, 2, 1}, 2, 4) == std::vector<std::size_t>{0, 3, 4, 5});
  // A bank without candidates leaves its slot to the banks' best left, the fullest first.
  CHECK(allocate_banks({0, 0, 0, 2}, 2, 4) == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(allocate_banks({0, 0, 0, 1, 1, 3}, 3, 4) == std::vector<std::size_t>{0, 3, 4, 5});
  CHECK(allocate_banks({0, 0, 0, 0, 1, 1, 2}, 5, 5) == std::vector<std::size_t>{0, 1, 4, 5, 6});
  // More banks than slots: the fullest banks' first.
  CHECK(allocate_banks({0, 1, 2, 3}, 3, 2) == std::vector<std::size_t>{2, 3});
  CHECK(allocate_banks({0, 1}, 1, 0).empty());
  CHECK(allocate_banks({1, 0, 1}, 1, 5) == std::vector<std::size_t>{0, 1, 2});
}

TEST_CASE("constraints: every output holds every constraint, with the model's log-probabilities", "[decode]") {
  const model::Transformer model = test::random_model(test::fixture_config("pre_untied_learned"), 5);
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6, 7}, {8, 9}, {10, 11, 12, 13}, {6, 5}};
  SearchOptions o;
  // A length cap of the source's length + 0 is shorter than the second and fourth sentences'
  // constraints (and prefix) need: it grows to hold them.
  for (const auto& [beam, extra] : {std::pair{1, 4}, std::pair{2, 4}, std::pair{4, 4}, std::pair{4, 0}}) {
    o.beam = o.nbest = beam;
    o.max_length_b = extra;
    INFO("beam " << beam << ", source length + " << extra);
    const auto plain = beam_search(model, sources, o);
    // Constraints the plain outputs lack: tokens none of them holds.
    std::vector<std::int32_t> absent;
    for (std::int32_t token = 4; token < model.config().tgt_vocab_size && absent.size() < 4; ++token) {
      bool seen = false;
      for (const auto& n : plain) {
        for (const Hypothesis& h : n) seen = seen || contains(h.tokens, {token});
      }
      if (!seen) absent.push_back(token);
    }
    REQUIRE(absent.size() == 4);
    const std::vector<TargetGuide> guides = {
        {{}, {{absent[0]}}},                                                // one token
        {{}, {{absent[1], absent[2]}, {absent[2], absent[3]}}},             // multi-piece, sharing a token
        {},                                                                 // none: the plain search's
        {{absent[3]}, {{absent[0], absent[0]}, {absent[1]}, {absent[2]}}},  // a prefix too
    };
    const auto out = beam_search(model, sources, o, &guides);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      INFO("sentence " << i);
      // (With no room to spare, the second sentence has two outputs: its constraints in either order.)
      REQUIRE(out[i].size() == (extra == 0 && i == 1 ? std::min(2u, static_cast<unsigned>(beam)) : beam));
      for (const Hypothesis& h : out[i]) {
        for (const std::vector<std::int32_t>& constraint : guides[i].constraints) CHECK(contains(h.tokens, constraint));
        CHECK(std::equal(guides[i].prefix.begin(), guides[i].prefix.end(), h.tokens.begin()));
        // Within the length cap, grown to hold the prefix and the constraints.
        CHECK(
            static_cast<std::int64_t>(h.tokens.size()) <=
            std::max<std::int64_t>(static_cast<std::int64_t>(sources[i].size()) + extra,
                                   static_cast<std::int64_t>(guides[i].prefix.size()) + guides[i].constraint_tokens()));
        CHECK(h.log_prob == Approx(test::sequence_log_prob(model, sources[i], h.tokens)).epsilon(1e-12));
        CHECK(h.score == hypothesis_score(o, h.log_prob, static_cast<std::int64_t>(h.tokens.size()) + 1));
      }
      if (guides[i].empty()) {  // bit for bit, though searched beside constrained sentences
        for (std::size_t j = 0; j < out[i].size(); ++j) {
          CHECK(out[i][j].tokens == plain[i][j].tokens);
          CHECK(out[i][j].log_prob == plain[i][j].log_prob);
        }
      }
    }
  }
}

TEST_CASE("constraints: what cannot be searched is refused", "[decode]") {
  const model::Transformer model = test::random_model(test::fixture_config("pre_untied_learned"), 4);
  const model::ModelConfig& c = model.config();
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6}};
  SearchOptions o;
  const std::vector<TargetGuide> too_long = {
      {{5, 5}, {std::vector<std::int32_t>(static_cast<std::size_t>(c.max_positions - 2), 6)}}};
  CHECK_THROWS_WITH(beam_search(model, sources, o, &too_long), Catch::Contains("do not fit the model's"));
  const std::vector<TargetGuide> eos = {{{}, {{5, c.eos_id}}}};
  CHECK_THROWS_WITH(beam_search(model, sources, o, &eos), Catch::Contains("a constraint holds the token id"));
  const std::vector<TargetGuide> empty = {{{}, {{}}}};
  CHECK_THROWS_WITH(beam_search(model, sources, o, &empty), Catch::Contains("an empty constraint"));
  o.sampling.enabled = true;
  const std::vector<TargetGuide> constrained = {{{}, {{5}}}};
  CHECK_THROWS_WITH(beam_search(model, sources, o, &constrained), Catch::Contains("need the beam search"));
}

}  // namespace dragoman::decode
