// Token-budget batching: every pair exactly once per epoch, the budget respected with padding
// counted, similar lengths together, and plans that are pure functions of (seed, epoch).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "base/error.h"
#include "base/philox.h"
#include "data/batching.h"

namespace dragoman {
namespace {

// n pairs with lengths from a fixed pseudo-random sequence (source 1..40, target 1..40).
data::EncodedCorpus synthetic_corpus(std::int64_t n) {
  data::EncodedCorpus c;
  std::uint32_t state = 7;
  for (std::int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    const std::int64_t s = 1 + (state >> 8) % 40, t = 1 + (state >> 20) % 40;
    for (std::int64_t k = 0; k < s; ++k) c.src_tokens.push_back(static_cast<std::int32_t>(4 + (i + k) % 50));
    for (std::int64_t k = 0; k < t; ++k) c.tgt_tokens.push_back(static_cast<std::int32_t>(4 + (i * 3 + k) % 50));
    c.src_offsets.push_back(static_cast<std::int64_t>(c.src_tokens.size()));
    c.tgt_offsets.push_back(static_cast<std::int64_t>(c.tgt_tokens.size()));
    c.line_numbers.push_back(i + 1);
  }
  c.counts.total = c.counts.kept = n;
  return c;
}

}  // namespace

TEST_CASE("batching: each pair once per epoch, within the token budget, padding counted", "[data]") {
  const data::EncodedCorpus c = synthetic_corpus(2000);
  for (const std::int64_t budget : {40, 100, 1000}) {
    const auto plan = data::make_token_batches(c, budget, 3, 0);
    std::vector<int> seen(static_cast<std::size_t>(c.size()), 0);
    for (const auto& batch : plan) {
      REQUIRE(!batch.empty());
      std::int64_t max_src = 0, max_tgt = 0;
      for (const std::int64_t i : batch) {
        ++seen[static_cast<std::size_t>(i)];
        max_src = std::max(max_src, c.src_length(i));
        max_tgt = std::max(max_tgt, c.tgt_length(i) + 1);  // with EOS
      }
      const std::int64_t size = static_cast<std::int64_t>(batch.size());
      if (size > 1) {  // a single pair over the budget is allowed a batch of its own
        CHECK(size * max_src <= budget);
        CHECK(size * max_tgt <= budget);
      }
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
}

TEST_CASE("batching: batches hold pairs of similar target length", "[data]") {
  const data::EncodedCorpus c = synthetic_corpus(4000);
  const auto plan = data::make_token_batches(c, 400, 1, 0);
  std::int64_t spread = 0;
  for (const auto& batch : plan) {
    std::int64_t lo = 1 << 30, hi = 0;
    for (const std::int64_t i : batch) {
      lo = std::min(lo, c.tgt_length(i));
      hi = std::max(hi, c.tgt_length(i));
    }
    spread = std::max(spread, hi - lo);
  }
  CHECK(spread <= 1);  // 4,000 pairs over 40 lengths: a batch of <= 400 tokens never spans more
}

TEST_CASE("batching: the plan is a function of (seed, epoch)", "[data]") {
  const data::EncodedCorpus c = synthetic_corpus(1500);
  const auto a = data::make_token_batches(c, 300, 11, 2);
  CHECK(data::make_token_batches(c, 300, 11, 2) == a);
  CHECK(data::make_token_batches(c, 300, 11, 3) != a);  // reshuffled each epoch
  CHECK(data::make_token_batches(c, 300, 12, 2) != a);  // and by seed
  // The batch order is shuffled: not sorted by length.
  std::vector<std::int64_t> first_lengths;
  for (const auto& batch : a) first_lengths.push_back(c.tgt_length(batch.front()));
  CHECK(!std::is_sorted(first_lengths.begin(), first_lengths.end()));
}

TEST_CASE("batching: a pair over the budget gets a batch of its own", "[data]") {
  const data::EncodedCorpus c = synthetic_corpus(50);
  const auto plan = data::make_token_batches(c, 5, 1, 0);
  std::size_t total = 0;
  for (const auto& batch : plan) {
    total += batch.size();
    if (batch.size() > 1) {
      for (const std::int64_t i : batch) CHECK(static_cast<std::int64_t>(batch.size()) * (c.tgt_length(i) + 1) <= 5);
    }
  }
  CHECK(total == 50);
  CHECK_THROWS_AS(data::make_token_batches(c, 0, 1, 0), Error);
}

TEST_CASE("batching: make_batch pads the pairs and adds BOS/EOS to the target", "[data]") {
  const data::EncodedCorpus c = synthetic_corpus(10);
  model::ModelConfig config;
  config.src_vocab_size = config.tgt_vocab_size = 60;
  const model::Batch b = data::make_batch(c, {3, 7}, config);
  REQUIRE(b.size() == 2);
  b.validate(config);
  const std::vector<std::int32_t> src = b.src.to_vector<std::int32_t>();
  const std::vector<std::int32_t> lengths = b.tgt_lengths.to_vector<std::int32_t>();
  CHECK(lengths[0] == c.tgt_length(3) + 1);
  CHECK(lengths[1] == c.tgt_length(7) + 1);
  CHECK(src[0] == c.src(3)[0]);
  CHECK(b.tgt_in.to_vector<std::int32_t>()[0] == config.bos_id);
  CHECK_THROWS_AS(data::make_batch(c, {}, config), Error);
  CHECK_THROWS_AS(data::make_batch(c, {10}, config), Error);
}

TEST_CASE("batching: Batch::to validates once and keeps the token count", "[data]") {
  model::ModelConfig config;
  config.src_vocab_size = config.tgt_vocab_size = 60;
  const model::Batch b = model::Batch::from_sentences({{5, 6}, {7}}, {{8, 9, 10}, {}}, config);
  CHECK(b.tokens == 5);  // counted when from_sentences validated it: (3 + 1) + (0 + 1)
  const model::Batch copy = b.to(Device::cpu(), config);
  CHECK(copy.target_tokens() == 5);
  CHECK_FALSE(copy.validated_on_device());  // on the CPU the forward pass validates it itself
  // An invalid batch never reaches a device.
  model::Batch bad = b;
  bad.src = Tensor::from_vector(std::vector<std::int32_t>{5, 6, 7, 99}, {2, 2});
  CHECK_THROWS_WITH(bad.to(Device::cpu(), config), Catch::Contains("invalid batch"));
}

}  // namespace dragoman

namespace dragoman {

TEST_CASE("batching: a curriculum takes the first epoch's batches from short to long", "[data]") {
  const data::EncodedCorpus c = synthetic_corpus(3000);
  const data::Curriculum curriculum{0.5, 0.2};
  const auto plain = data::make_token_batches(c, 300, 5, 0);
  const auto plan = data::make_token_batches(c, 300, 5, 0, curriculum);
  // The same batches, each once, in another order; the same for (seed, epoch, curriculum).
  REQUIRE(plan.size() == plain.size());
  CHECK(std::multiset<std::vector<std::int64_t>>(plan.begin(), plan.end()) ==
        std::multiset<std::vector<std::int64_t>>(plain.begin(), plain.end()));
  CHECK(plan != plain);
  CHECK(data::make_token_batches(c, 300, 5, 0, curriculum) == plan);
  CHECK(data::make_token_batches(c, 300, 6, 0, curriculum) != plan);

  // A batch's length: its longest target, then its longest source (the order it was made in, up
  // to batches of equal lengths).
  const auto key = [&](const std::vector<std::int64_t>& batch) {
    std::int64_t t = 0, s = 0;
    for (const std::int64_t i : batch) {
      t = std::max(t, c.tgt_length(i));
      s = std::max(s, c.src_length(i));
    }
    return std::make_pair(t, s);
  };
  std::vector<std::pair<std::int64_t, std::int64_t>> by_length;
  for (const auto& batch : plain) by_length.push_back(key(batch));
  std::sort(by_length.begin(), by_length.end());
  std::multiset<std::pair<std::int64_t, std::int64_t>> unused(by_length.begin(), by_length.end());
  const auto n = static_cast<double>(plan.size());
  double early = 0, late = 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    // Open: the shortest ceil(c(i) n), or the shortest unused one when those are taken.
    const double competence = std::min(1.0, std::sqrt(static_cast<double>(i) / (0.5 * n) * (1 - 0.04) + 0.04));
    const auto limit = static_cast<std::size_t>(std::ceil(competence * n));
    const auto k = key(plan[i]);
    INFO("position " << i << ", length " << k.first << "/" << k.second << ", open " << limit);
    CHECK((k <= by_length[limit - 1] || k == *unused.begin()));
    unused.erase(unused.find(k));
    if (static_cast<double>(i) < n / 4) early += static_cast<double>(k.first);
    if (static_cast<double>(i) >= 3 * n / 4) late += static_cast<double>(k.first);
  }
  CHECK(early < late);

  // Later epochs are shuffled as without it; length 0 is no curriculum.
  CHECK(data::make_token_batches(c, 300, 5, 1, curriculum) == data::make_token_batches(c, 300, 5, 1));
  CHECK(data::make_token_batches(c, 300, 5, 0, data::Curriculum{0.0, 0.2}) == plain);
  CHECK_THROWS_AS(data::make_token_batches(c, 300, 5, 0, data::Curriculum{1.5, 0.2}), Error);
  CHECK_THROWS_AS(data::make_token_batches(c, 300, 5, 0, data::Curriculum{0.5, 0.0}), Error);
}

}  // namespace dragoman

namespace dragoman {
namespace {

// The batches make_token_batches forms (before its shuffle), by the definition: the pairs sorted by
// (target length, source length, the tie philox draws from (seed, epoch), index) with a comparison
// sort, then cut greedily at the budget.
std::vector<std::vector<std::int64_t>> batches_by_definition(const data::EncodedCorpus& c, std::int64_t budget,
                                                             std::uint64_t seed, std::uint64_t epoch) {
  const std::uint64_t stream = 0xBA7C'0000'0000'0000ull + epoch;
  const auto tie = [&](std::int64_t i) {
    const auto k = static_cast<std::uint64_t>(i);
    return (static_cast<std::uint64_t>(philox::bits(seed, stream, 2 * k)) << 32) |
           philox::bits(seed, stream, 2 * k + 1);
  };
  std::vector<std::int64_t> order(static_cast<std::size_t>(c.size()));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    if (c.tgt_length(a) != c.tgt_length(b)) return c.tgt_length(a) < c.tgt_length(b);
    if (c.src_length(a) != c.src_length(b)) return c.src_length(a) < c.src_length(b);
    if (tie(a) != tie(b)) return tie(a) < tie(b);
    return a < b;
  });
  std::vector<std::vector<std::int64_t>> batches;
  std::vector<std::int64_t> current;
  std::int64_t max_src = 0, max_tgt = 0;
  for (const std::int64_t i : order) {
    const std::int64_t s = std::max(max_src, c.src_length(i)), t = std::max(max_tgt, c.tgt_length(i) + 1);
    const auto size = static_cast<std::int64_t>(current.size()) + 1;
    if (!current.empty() && (size * s > budget || size * t > budget)) {
      batches.push_back(std::move(current));
      current.clear();
      max_src = max_tgt = 0;
    }
    current.push_back(i);
    max_src = std::max(max_src, c.src_length(i));
    max_tgt = std::max(max_tgt, c.tgt_length(i) + 1);
  }
  if (!current.empty()) batches.push_back(std::move(current));
  return batches;
}

}  // namespace

TEST_CASE("batching: the length order (counting sort, ties per group) is the comparison sort's exactly", "[data]") {
  // Plans must not change between versions (a resumed run, the PyTorch twin): the batches, as sets
  // and each in its order, are the definition's for several corpora, budgets, seeds and epochs.
  for (const std::int64_t n : {1, 7, 2000, 20000}) {
    const data::EncodedCorpus c = synthetic_corpus(n);
    for (const std::int64_t budget : {40, 300, 4000}) {
      for (const std::uint64_t seed : {1u, 12345u}) {
        for (const std::int64_t epoch : {0, 3}) {
          auto plan = data::make_token_batches(c, budget, seed, epoch);
          auto expected = batches_by_definition(c, budget, seed, static_cast<std::uint64_t>(epoch));
          std::sort(plan.begin(), plan.end());
          std::sort(expected.begin(), expected.end());
          INFO(n << " pairs, budget " << budget << ", seed " << seed << ", epoch " << epoch);
          CHECK(plan == expected);
        }
      }
    }
  }
}

}  // namespace dragoman
