// Sampled decoding: the distribution a row is drawn from is the model's, tempered and truncated as
// the options say (checked against a direct computation, and by a chi-square test of many draws);
// top-k and top-p never give a token outside the kept set; the samples of a sentence are the
// model's (their log-probabilities), reproducible whatever they are batched with, and follow the
// model's first-token distribution.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "base/error.h"
#include "decode/beam_search.h"
#include "decode/decode_testing.h"
#include "decode/sampling.h"
#include "model/model_testing.h"

namespace dragoman::decode {
namespace {

// The chi-square statistic of `counts` against `probabilities` (n draws).
double chi_square(const std::map<std::int32_t, double>& probabilities, const std::map<std::int32_t, int>& counts,
                  int n) {
  double chi = 0;
  for (const auto& [token, p] : probabilities) {
    const double expected = p * n;
    const auto it = counts.find(token);
    const double seen = it == counts.end() ? 0 : it->second;
    chi += (seen - expected) * (seen - expected) / expected;
  }
  return chi;
}

// The 0.999 quantile of the chi-square distribution with 1..7 degrees of freedom: a correct sampler
// exceeds it once in a thousand seeds; the seeds here are fixed.
constexpr double kChiSquare999[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32};

// What the options keep of `log_probs`, computed directly: the tempered softmax over the allowed
// tokens, the k most probable, then the smallest most-probable set reaching p, renormalised.
std::map<std::int32_t, double> expected_distribution(const std::vector<double>& log_probs, const SamplingOptions& o,
                                                     const std::vector<std::int32_t>& excluded) {
  std::vector<std::pair<double, std::int32_t>> order;
  for (std::int32_t v = 0; v < static_cast<std::int32_t>(log_probs.size()); ++v) {
    if (std::count(excluded.begin(), excluded.end(), v) == 0) order.emplace_back(log_probs[v], v);
  }
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  if (o.top_k > 0 && static_cast<std::size_t>(o.top_k) < order.size()) order.resize(static_cast<std::size_t>(o.top_k));
  double z = 0;
  for (const auto& [lp, v] : order) z += std::exp(lp / o.temperature);
  std::map<std::int32_t, double> p;
  double cumulative = 0;
  for (const auto& [lp, v] : order) {
    if (cumulative >= o.top_p) break;
    p[v] = std::exp(lp / o.temperature) / z;
    cumulative += p[v];
  }
  for (auto& [v, q] : p) q /= cumulative;
  return p;
}

}  // namespace

TEST_CASE("sampling: the distribution is the tempered, truncated softmax, and draws follow it", "[decode]") {
  // A row of log-probabilities over 8 tokens; <pad> (0) and <s> (2) are never drawn.
  std::vector<double> row = {-0.3, -2.0, -1.0, -1.2, -2.5, -0.9, -4.0, -1.7};
  const double log_z =
      std::log(std::accumulate(row.begin(), row.end(), 0.0, [](double a, double x) { return a + std::exp(x); }));
  for (double& x : row) x -= log_z;
  const std::vector<std::int32_t> excluded = {0, 2};
  struct Case {
    double temperature;
    int top_k;
    double top_p;
  };
  for (const Case c : {Case{1, 0, 1}, Case{0.5, 0, 1}, Case{2, 0, 1}, Case{1, 3, 1}, Case{1, 0, 0.7}, Case{1.5, 4, 0.9},
                       Case{1, 1, 1}}) {
    SamplingOptions o;
    o.enabled = true;
    o.temperature = c.temperature;
    o.top_k = c.top_k;
    o.top_p = c.top_p;
    INFO("temperature " << c.temperature << ", top-k " << c.top_k << ", top-p " << c.top_p);
    const std::map<std::int32_t, double> expected = expected_distribution(row, o, excluded);
    const auto got = sampling_distribution(row.data(), 8, o, excluded);
    REQUIRE(got.size() == expected.size());
    for (const auto& [token, p] : got) {
      REQUIRE(expected.count(token) == 1);
      CHECK(p == Approx(expected.at(token)).epsilon(1e-12));
    }
    // 40,000 draws, as a sentence's samples draw them: none outside the kept set, and the counts
    // within the chi-square test's 0.999 quantile.
    constexpr int n = 40000;
    std::map<std::int32_t, int> counts;
    for (int i = 0; i < n; ++i) ++counts[pick_token(got, sampling_uniform(7, 12345, i, 3))];
    for (const auto& [token, count] : counts) CHECK(expected.count(token) == 1);
    if (expected.size() > 1) CHECK(chi_square(expected, counts, n) < kChiSquare999[expected.size() - 1]);
  }
  SamplingOptions bad;
  bad.temperature = 0;
  CHECK_THROWS_WITH(sampling_distribution(row.data(), 8, bad, excluded), Catch::Contains("temperature must be > 0"));
  bad.temperature = 1;
  bad.top_p = 0;
  CHECK_THROWS_WITH(sampling_distribution(row.data(), 8, bad, excluded), Catch::Contains("top-p must be in (0, 1]"));
}

TEST_CASE("sampling: top-p over a large vocabulary, sorted only as far as the nucleus needs", "[decode]") {
  // 5,000 tokens: a peaked row (the nucleus within the first 64) and a flat one (it needs most of
  // the vocabulary: the partial sort grows several times); both equal the direct computation.
  for (const double slope : {0.5, 0.0005}) {
    std::vector<double> row(5000);
    for (std::size_t v = 0; v < row.size(); ++v) row[v] = -slope * static_cast<double>((v * 7919) % row.size());
    const double log_z =
        std::log(std::accumulate(row.begin(), row.end(), 0.0, [](double a, double x) { return a + std::exp(x); }));
    for (double& x : row) x -= log_z;
    for (const double top_p : {0.5, 0.9, 0.999}) {
      SamplingOptions o;
      o.top_p = top_p;
      INFO("slope " << slope << ", top-p " << top_p);
      const std::map<std::int32_t, double> expected = expected_distribution(row, o, {0, 2});
      const auto got = sampling_distribution(row.data(), 5000, o, {0, 2});
      REQUIRE(got.size() == expected.size());
      for (const auto& [token, p] : got) CHECK(p == Approx(expected.at(token)).epsilon(1e-9));
    }
  }
}

TEST_CASE("sampling: uniforms are a function of (seed, sentence, sample, step), from 0 to below 1", "[decode]") {
  CHECK(sampling_uniform(1, 2, 3, 4) == sampling_uniform(1, 2, 3, 4));
  std::vector<double> all;
  for (std::uint64_t seed : {1u, 2u}) {
    for (std::uint64_t key : {5u, 6u}) {
      for (std::int64_t sample = 0; sample < 3; ++sample) {
        for (std::int64_t step = 0; step < 50; ++step) all.push_back(sampling_uniform(seed, key, sample, step));
      }
    }
  }
  for (const double u : all) CHECK((u >= 0 && u < 1));
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());  // no two draws alike
  CHECK(sampling_key({5, 6, 7}) != sampling_key({5, 6}));
}

TEST_CASE("sampling: a sentence's samples are the model's, and batching changes nothing", "[decode]") {
  const model::Transformer model = test::random_model(test::fixture_config("pre_untied_learned"), 9);
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6, 7}, {8}, {9, 10, 11, 12, 13}};
  SearchOptions o;
  o.sampling.enabled = true;
  o.sampling.seed = 11;
  o.sampling.temperature = 1.3;
  o.beam = o.nbest = 6;
  o.max_length_b = 6;
  const auto together = beam_search(model, sources, o);
  std::set<std::vector<std::int32_t>> outputs;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    INFO("sentence " << i);
    const auto alone = beam_search(model, {sources[i]}, o)[0];
    REQUIRE(alone.size() == 6);
    REQUIRE(together[i].size() == 6);
    for (std::size_t j = 0; j < alone.size(); ++j) {
      CHECK(together[i][j].tokens == alone[j].tokens);
      if (j > 0) CHECK(alone[j - 1].score >= alone[j].score);
      // The reported log-probability is the model's own (no temperature), and its parts add up to it.
      CHECK(alone[j].log_prob == Approx(test::sequence_log_prob(model, sources[i], alone[j].tokens)).epsilon(1e-12));
      CHECK(alone[j].token_log_probs.size() == alone[j].tokens.size() + 1);
      outputs.insert(alone[j].tokens);
    }
  }
  CHECK(outputs.size() > 6);  // samples, not one search's n-best: they differ
  // Another seed, other samples; top-k 1 is greedy decoding (beam 1).
  SearchOptions other = o;
  other.sampling.seed = 12;
  const auto reseeded = beam_search(model, sources, other);
  bool differs = false;
  for (std::size_t i = 0; i < sources.size(); ++i) differs = differs || reseeded[i][0].tokens != together[i][0].tokens;
  CHECK(differs);
  SearchOptions greedy;
  greedy.beam = 1;
  greedy.max_length_b = 6;
  other.sampling.top_k = 1;
  other.beam = other.nbest = 1;
  const auto top1 = beam_search(model, sources, other);
  const auto beam1 = beam_search(model, sources, greedy);
  for (std::size_t i = 0; i < sources.size(); ++i) CHECK(top1[i][0].tokens == beam1[i][0].tokens);
}

TEST_CASE("sampling: the first tokens of many samples follow the model's first-step distribution", "[decode]") {
  const model::ModelConfig c = test::small_vocab_config();
  const model::Transformer model = test::random_model(c, 3);
  const std::vector<std::int32_t> source = {4, 5, 6};
  // The model's first-step log-probabilities.
  const model::Batch batch = model::Batch::from_sentences({source}, {{}}, c);
  model::DecoderState state = model.start_decoding(model.encode(batch.src, batch.src_lengths), batch.src_lengths, 2);
  const std::vector<double> first =
      model.decode_step(state, Tensor::from_vector(std::vector<std::int32_t>{c.bos_id}, {1})).to_vector<double>();
  for (const double temperature : {1.0, 0.7}) {
    SearchOptions o;
    o.sampling.enabled = true;
    o.sampling.temperature = temperature;
    o.beam = o.nbest = 3000;
    o.max_length_a = 0;
    o.max_length_b = 1;  // one token, then EOS
    const auto samples = beam_search(model, {source}, o)[0];
    REQUIRE(samples.size() == 3000);
    std::map<std::int32_t, int> counts;
    for (const Hypothesis& h : samples) ++counts[h.tokens.empty() ? c.eos_id : h.tokens[0]];
    SamplingOptions shaped;
    shaped.temperature = temperature;
    const std::map<std::int32_t, double> expected = expected_distribution(first, shaped, {c.pad_id, c.bos_id});
    INFO("temperature " << temperature);
    CHECK(counts.count(c.pad_id) == 0);
    CHECK(counts.count(c.bos_id) == 0);
    CHECK(chi_square(expected, counts, 3000) < kChiSquare999[expected.size() - 1]);
  }
}

}  // namespace dragoman::decode
