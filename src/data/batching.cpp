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

// The pairs ordered by (target length, source length, a random tie from (seed, epoch), index). A
// counting sort by the two lengths, then each group of equal lengths sorted by its ties, computed
// for the group only: linear in the corpus, reading its offsets in order (a comparison sort over
// tens of millions of pairs reads them at random and took most of a minute), and no tie array of
// the corpus's size. The order is the comparison's exactly: ties and indices decide it fully.
std::vector<std::int64_t> length_order(const EncodedCorpus& corpus, std::uint64_t seed, std::uint64_t epoch) {
  const auto n = static_cast<std::size_t>(corpus.size());
  std::int64_t max_src = 0, max_tgt = 0;
  for (std::size_t i = 0; i < n; ++i) {
    max_src = std::max(max_src, corpus.src_length(static_cast<std::int64_t>(i)));
    max_tgt = std::max(max_tgt, corpus.tgt_length(static_cast<std::int64_t>(i)));
  }
  const auto groups = static_cast<std::size_t>((max_tgt + 1) * (max_src + 1));
  std::vector<std::int64_t> order(n);
  const auto tie_sort = [&](std::int64_t* first, std::int64_t* last) {
    std::vector<std::pair<std::uint64_t, std::int64_t>> keyed;
    keyed.reserve(static_cast<std::size_t>(last - first));
    for (std::int64_t* i = first; i != last; ++i) {
      keyed.emplace_back(random64(seed, kSortStream + epoch, static_cast<std::uint64_t>(*i)), *i);
    }
    std::sort(keyed.begin(), keyed.end());
    for (const auto& [tie, i] : keyed) *first++ = i;
  };
  if (groups > (std::size_t{1} << 24)) {  // lengths no filter bounded: one comparison sort
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      const std::int64_t ta = corpus.tgt_length(a), tb = corpus.tgt_length(b);
      if (ta != tb) return ta < tb;
      return corpus.src_length(a) < corpus.src_length(b);
    });
    std::size_t begin = 0;
    for (std::size_t i = 1; i <= n; ++i) {
      if (i == n || corpus.tgt_length(order[i]) != corpus.tgt_length(order[begin]) ||
          corpus.src_length(order[i]) != corpus.src_length(order[begin])) {
        tie_sort(order.data() + begin, order.data() + i);
        begin = i;
      }
    }
    return order;
  }
  const auto group = [&](std::size_t i) {
    const auto k = static_cast<std::int64_t>(i);
    return static_cast<std::size_t>(corpus.tgt_length(k) * (max_src + 1) + corpus.src_length(k));
  };
  std::vector<std::size_t> start(groups + 1, 0);
  for (std::size_t i = 0; i < n; ++i) ++start[group(i) + 1];
  for (std::size_t g = 0; g < groups; ++g) start[g + 1] += start[g];
  std::vector<std::size_t> next(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < n; ++i) order[next[group(i)]++] = static_cast<std::int64_t>(i);
  for (std::size_t g = 0; g < groups; ++g) {
    if (start[g + 1] - start[g] > 1) tie_sort(order.data() + start[g], order.data() + start[g + 1]);
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
  const std::uint64_t e = static_cast<std::uint64_t>(epoch);
  const std::vector<std::int64_t> order = length_order(corpus, seed, e);
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
