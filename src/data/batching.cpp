#include "data/batching.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"
#include "base/philox.h"

namespace dragoman::data {
namespace {

// Random streams of the batcher, apart from the dropout streams that share the seed.
constexpr std::uint64_t kSortStream = philox::purpose_stream(philox::Purpose::kData, 0xA7C'0000'0000'0000ull);
constexpr std::uint64_t kShuffleStream = philox::purpose_stream(philox::Purpose::kData, 0xA7C'0001'0000'0000ull);
constexpr std::uint64_t kCurriculumStream = philox::purpose_stream(philox::Purpose::kData, 0xA7C'0002'0000'0000ull);
static_assert(kSortStream == 0xBA7C'0000'0000'0000ull, "the batcher's streams never change (resume, the twin)");

std::uint64_t random64(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return (static_cast<std::uint64_t>(philox::bits(seed, stream, 2 * index)) << 32) |
         philox::bits(seed, stream, 2 * index + 1);
}

// The curriculum's order of batches ranked by length (see batching.h): position i takes a random
// unused batch among the shortest ceil(c(i) n), or the shortest unused one when all of those are
// taken.
std::vector<std::size_t> curriculum_order(std::size_t n, const Curriculum& curriculum, std::uint64_t seed) {
  const double count = static_cast<double>(n), c0 = curriculum.start;
  std::vector<std::size_t> open, order;
  open.reserve(n);
  order.reserve(n);
  std::size_t next = 0;  // the shortest batch not yet open
  for (std::size_t i = 0; i < n; ++i) {
    const double progress = static_cast<double>(i) / (curriculum.length * count);
    const double competence = std::min(1.0, std::sqrt(progress * (1.0 - c0 * c0) + c0 * c0));
    const auto limit = static_cast<std::size_t>(std::ceil(competence * count));
    while (next < n && (next < limit || open.empty())) open.push_back(next++);
    const auto k = static_cast<std::size_t>(random64(seed, kCurriculumStream, i) % open.size());
    order.push_back(open[k]);
    open[k] = open.back();
    open.pop_back();
  }
  return order;
}

}  // namespace

std::vector<std::vector<std::int64_t>> make_token_batches(const EncodedCorpus& corpus, std::int64_t max_tokens,
                                                          std::uint64_t seed, std::int64_t epoch,
                                                          const Curriculum& curriculum) {
  if (!(curriculum.length >= 0.0 && curriculum.length <= 1.0) || !(curriculum.start > 0.0 && curriculum.start <= 1.0)) {
    throw Error("batching: the curriculum's length must be in [0, 1] and its start in (0, 1]");
  }
  if (max_tokens < 1) throw Error("batching: max_tokens must be >= 1");
  const std::int64_t n = corpus.size();
  const std::uint64_t e = static_cast<std::uint64_t>(epoch);
  std::vector<std::uint64_t> tie(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) tie[i] = random64(seed, kSortStream + e, static_cast<std::uint64_t>(i));
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    const std::int64_t ta = corpus.tgt_length(a), tb = corpus.tgt_length(b);
    if (ta != tb) return ta < tb;
    const std::int64_t sa = corpus.src_length(a), sb = corpus.src_length(b);
    if (sa != sb) return sa < sb;
    if (tie[a] != tie[b]) return tie[a] < tie[b];
    return a < b;
  });

  std::vector<std::vector<std::int64_t>> batches;
  std::vector<std::int64_t> current;
  std::int64_t max_src = 0, max_tgt = 0;  // the target with its EOS
  for (const std::int64_t i : order) {
    const std::int64_t s = std::max(max_src, corpus.src_length(i));
    const std::int64_t t = std::max(max_tgt, corpus.tgt_length(i) + 1);
    const std::int64_t size = static_cast<std::int64_t>(current.size()) + 1;
    if (!current.empty() && (size * s > max_tokens || size * t > max_tokens)) {
      batches.push_back(std::move(current));
      current.clear();
      max_src = max_tgt = 0;
    }
    current.push_back(i);
    max_src = std::max(max_src, corpus.src_length(i));
    max_tgt = std::max(max_tgt, corpus.tgt_length(i) + 1);
  }
  if (!current.empty()) batches.push_back(std::move(current));

  if (epoch == 0 && curriculum.length > 0.0) {  // built in length order: batch j is the j-th shortest
    std::vector<std::vector<std::int64_t>> ordered;
    ordered.reserve(batches.size());
    for (const std::size_t j : curriculum_order(batches.size(), curriculum, seed)) {
      ordered.push_back(std::move(batches[j]));
    }
    return ordered;
  }
  // Fisher-Yates over the batches.
  for (std::size_t j = batches.size(); j > 1; --j) {
    const std::size_t k = static_cast<std::size_t>(random64(seed, kShuffleStream + e, j) % j);
    std::swap(batches[j - 1], batches[k]);
  }
  return batches;
}

model::Batch make_batch(const EncodedCorpus& corpus, const std::vector<std::int64_t>& pairs,
                        const model::ModelConfig& config) {
  if (pairs.empty()) throw Error("batching: an empty batch");
  std::vector<std::vector<std::int32_t>> src, tgt;
  src.reserve(pairs.size());
  tgt.reserve(pairs.size());
  for (const std::int64_t i : pairs) {
    if (i < 0 || i >= corpus.size()) throw Error("batching: pair index " + std::to_string(i) + " out of range");
    src.push_back(corpus.src(i));
    tgt.push_back(corpus.tgt(i));
  }
  return model::Batch::from_sentences(src, tgt, config);
}

}  // namespace dragoman::data
