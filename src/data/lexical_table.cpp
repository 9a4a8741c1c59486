#include "data/lexical_table.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "base/error.h"
#include "base/parallel.h"

namespace dragoman::data {
namespace {

// (source, target) -> slot, by open addressing with linear probing: the co-occurrences are tens of
// millions on a corpus of a few hundred thousand pairs, where std::unordered_map's nodes would take
// several times the memory.
class PairIndex {
 public:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  static std::uint64_t key(std::int64_t source, std::int32_t target) {
    return (static_cast<std::uint64_t>(source) << 32) | static_cast<std::uint32_t>(target);
  }
  // The slot of `k`, added when new.
  std::uint32_t insert(std::uint64_t k) {
    if (2 * (size_ + 1) > keys_.size()) grow();
    if (size_ == std::size_t{0xffffffffU}) {
      throw Error("lexical table: more than 4,294,967,295 distinct co-occurring pieces: use fewer pairs (--max-pairs)");
    }
    std::size_t at = position(k);
    while (keys_[at] != kEmpty) {
      if (keys_[at] == k) return slots_[at];
      at = (at + 1) & (keys_.size() - 1);
    }
    keys_[at] = k;
    slots_[at] = static_cast<std::uint32_t>(size_);
    return static_cast<std::uint32_t>(size_++);
  }
  // The slot of `k`, which must be present.
  std::uint32_t find(std::uint64_t k) const {
    std::size_t at = position(k);
    while (keys_[at] != k) at = (at + 1) & (keys_.size() - 1);
    return slots_[at];
  }
  std::size_t size() const { return size_; }
  // Every (key, slot).
  template <typename Fn>
  void for_each(Fn fn) const {
    for (std::size_t i = 0; i < keys_.size(); ++i) {
      if (keys_[i] != kEmpty) fn(keys_[i], slots_[i]);
    }
  }

 private:
  std::size_t position(std::uint64_t k) const {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;  // MurmurHash3's finaliser
    k ^= k >> 33;
    return static_cast<std::size_t>(k) & (keys_.size() - 1);
  }
  void grow() {
    std::vector<std::uint64_t> keys = std::move(keys_);
    std::vector<std::uint32_t> slots = std::move(slots_);
    keys_.assign(std::max<std::size_t>(1024, 2 * keys.size()), kEmpty);
    slots_.assign(keys_.size(), 0);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == kEmpty) continue;
      std::size_t at = position(keys[i]);
      while (keys_[at] != kEmpty) at = (at + 1) & (keys_.size() - 1);
      keys_[at] = keys[i];
      slots_[at] = slots[i];
    }
  }
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> slots_;
  std::size_t size_ = 0;
};

}  // namespace

LexicalTable train_ibm_model1(const EncodedCorpus& corpus, std::int64_t source_vocab, std::int64_t target_vocab,
                              const LexicalTableOptions& options, const std::function<void(int)>& progress) {
  if (options.iterations < 1) throw Error("lexical table: at least one EM iteration");
  const std::int64_t pairs = options.max_pairs > 0 ? std::min(options.max_pairs, corpus.size()) : corpus.size();
  if (pairs == 0) throw Error("lexical table: the corpus has no sentence pairs");
  const std::int64_t null_word = source_vocab;  // the extra source row
  LexicalTable table;
  table.pairs = pairs;
  table.target_counts.assign(static_cast<std::size_t>(target_vocab), 0);
  const auto check = [](std::int32_t id, std::int64_t size, const char* side) {
    if (id < 0 || id >= size) {
      throw Error(std::string("lexical table: a ") + side + " id " + std::to_string(id) + " is outside the vocabulary");
    }
  };
  // The co-occurrences, numbered in the order first seen.
  PairIndex index;
  std::vector<std::int64_t> slot_source;
  for (std::int64_t i = 0; i < pairs; ++i) {
    for (std::int64_t j = corpus.tgt_offsets[i]; j < corpus.tgt_offsets[i + 1]; ++j) {
      const std::int32_t f = corpus.tgt_tokens[j];
      check(f, target_vocab, "target");
      ++table.target_counts[static_cast<std::size_t>(f)];
      const auto add = [&](std::int64_t e) {
        if (index.insert(PairIndex::key(e, f)) == slot_source.size()) slot_source.push_back(e);
      };
      add(null_word);
      for (std::int64_t k = corpus.src_offsets[i]; k < corpus.src_offsets[i + 1]; ++k) {
        check(corpus.src_tokens[k], source_vocab, "source");
        add(corpus.src_tokens[k]);
      }
    }
  }
  const std::size_t slots = index.size();
  table.cooccurrences = static_cast<std::int64_t>(slots);
  std::vector<float> prob(slots, 1.0F);  // uniform: the first E step counts co-occurrences, normalised
  // Each thread's counts are a double per co-occurrence (a float would stop growing past 2^24 times
  // a posterior): at most 8 threads, so that their memory stays a few times the table's.
  const int threads = std::clamp(options.threads, 1, 8);
  std::vector<std::vector<double>> counts(static_cast<std::size_t>(threads));
  for (int iteration = 1; iteration <= options.iterations; ++iteration) {
    // E step: each target token's alignment distribution over its sentence's source tokens and NULL.
    const std::size_t chunks = static_cast<std::size_t>(threads);
    parallel_for(chunks, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t w = begin; w < end; ++w) {
        std::vector<double>& count = counts[w];
        count.assign(slots, 0.0);
        std::vector<std::uint32_t> at;
        const auto first = static_cast<std::int64_t>(w) * pairs / static_cast<std::int64_t>(chunks);
        const auto last = static_cast<std::int64_t>(w + 1) * pairs / static_cast<std::int64_t>(chunks);
        for (std::int64_t i = first; i < last; ++i) {
          const std::int64_t s0 = corpus.src_offsets[i], s1 = corpus.src_offsets[i + 1];
          for (std::int64_t j = corpus.tgt_offsets[i]; j < corpus.tgt_offsets[i + 1]; ++j) {
            const std::int32_t f = corpus.tgt_tokens[j];
            at.clear();
            at.push_back(index.find(PairIndex::key(null_word, f)));
            for (std::int64_t k = s0; k < s1; ++k) at.push_back(index.find(PairIndex::key(corpus.src_tokens[k], f)));
            float z = 0.0F;
            for (const std::uint32_t a : at) z += prob[a];
            if (!(z > 0.0F)) continue;
            for (const std::uint32_t a : at) count[a] += static_cast<double>(prob[a] / z);
          }
        }
      }
    });
    // M step: p(f | e) = count(e, f) / count(e), the chunks' counts summed in chunk order.
    std::vector<double> total(static_cast<std::size_t>(source_vocab + 1), 0.0);
    std::vector<double>& sums = counts.front();  // chunk 0's counts become the sums
    for (std::size_t a = 0; a < slots; ++a) {
      for (std::size_t w = 1; w < counts.size(); ++w) sums[a] += counts[w][a];
      total[static_cast<std::size_t>(slot_source[a])] += sums[a];
    }
    for (std::size_t a = 0; a < slots; ++a) {
      const double t = total[static_cast<std::size_t>(slot_source[a])];
      prob[a] = t > 0 ? static_cast<float>(sums[a] / t) : 0.0F;
    }
    if (progress) progress(iteration);
  }
  counts.clear();
  table.by_source.assign(static_cast<std::size_t>(source_vocab), {});
  index.for_each([&](std::uint64_t key, std::uint32_t slot) {
    const auto e = static_cast<std::int64_t>(key >> 32);
    if (e == null_word) return;
    table.by_source[static_cast<std::size_t>(e)].emplace_back(static_cast<std::int32_t>(key & 0xffffffffU), prob[slot]);
  });
  for (auto& list : table.by_source) {
    std::sort(list.begin(), list.end(), [](const auto& x, const auto& y) {
      if (x.second != y.second) return x.second > y.second;
      return x.first < y.first;
    });
  }
  return table;
}

}  // namespace dragoman::data
