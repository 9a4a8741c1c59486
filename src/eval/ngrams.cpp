// Exact n-gram counting (see ngrams.h).
#include "eval/ngrams.h"

#include <algorithm>

namespace dragoman::eval {
namespace {

// Orders too long to pack: intern the n-gram windows of all sequences by content.
std::vector<std::vector<NgramKey>> interned_windows(const std::vector<std::u32string_view>& sequences, std::size_t n) {
  std::vector<std::vector<std::u32string_view>> windows(sequences.size());
  for (std::size_t s = 0; s < sequences.size(); ++s) {
    for (std::size_t i = 0; i + n <= sequences[s].size(); ++i) windows[s].push_back(sequences[s].substr(i, n));
  }
  const std::vector<std::u32string> ids = intern_tokens(windows);
  std::vector<std::vector<NgramKey>> keys(sequences.size());
  for (std::size_t s = 0; s < ids.size(); ++s) keys[s].assign(ids[s].begin(), ids[s].end());
  return keys;
}

}  // namespace

std::vector<std::vector<NgramKey>> ngram_keys(const std::vector<std::u32string_view>& sequences, std::size_t n,
                                              unsigned bits_per_symbol) {
  if (n == 0) return std::vector<std::vector<NgramKey>>(sequences.size());
  if (n * bits_per_symbol > 128) return interned_windows(sequences, n);
  std::vector<std::vector<NgramKey>> keys(sequences.size());
  for (std::size_t s = 0; s < sequences.size(); ++s) {
    const std::u32string_view seq = sequences[s];
    if (seq.size() < n) continue;
    keys[s].reserve(seq.size() - n + 1);
    for (std::size_t i = 0; i + n <= seq.size(); ++i) {
      NgramKey key = 0;
      for (std::size_t k = 0; k < n; ++k) key = (key << bits_per_symbol) | seq[i + k];
      keys[s].push_back(key);
    }
  }
  return keys;
}

NgramCounts count_keys(std::vector<NgramKey> keys) {
  std::sort(keys.begin(), keys.end());
  NgramCounts counts;
  counts.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size();) {
    std::size_t j = i + 1;
    while (j < keys.size() && keys[j] == keys[i]) ++j;
    counts.push_back({keys[i], static_cast<std::int64_t>(j - i)});
    i = j;
  }
  return counts;
}

NgramCounts max_merge(const NgramCounts& a, const NgramCounts& b) {
  NgramCounts out;
  out.reserve(a.size() + b.size());
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].key < b[j].key)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || b[j].key < a[i].key) {
      out.push_back(b[j++]);
    } else {
      out.push_back({a[i].key, std::max(a[i].count, b[j].count)});
      ++i;
      ++j;
    }
  }
  return out;
}

std::int64_t clipped_matches(const NgramCounts& hyp, const NgramCounts& ref) {
  std::int64_t matches = 0;
  std::size_t i = 0, j = 0;
  while (i < hyp.size() && j < ref.size()) {
    if (hyp[i].key < ref[j].key) {
      ++i;
    } else if (ref[j].key < hyp[i].key) {
      ++j;
    } else {
      matches += std::min(hyp[i].count, ref[j].count);
      ++i;
      ++j;
    }
  }
  return matches;
}

std::int64_t total_count(const NgramCounts& counts) {
  std::int64_t total = 0;
  for (const auto& c : counts) total += c.count;
  return total;
}

std::vector<std::u32string> intern_tokens(const std::vector<std::vector<std::u32string_view>>& tokens) {
  struct Occurrence {
    std::u32string_view token;
    std::uint32_t sentence;
    std::uint32_t position;
  };
  std::vector<Occurrence> all;
  std::vector<std::u32string> ids(tokens.size());
  for (std::size_t s = 0; s < tokens.size(); ++s) {
    ids[s].resize(tokens[s].size());
    for (std::size_t i = 0; i < tokens[s].size(); ++i) {
      all.push_back({tokens[s][i], static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(i)});
    }
  }
  std::sort(all.begin(), all.end(), [](const Occurrence& a, const Occurrence& b) { return a.token < b.token; });
  char32_t next_id = 0;
  for (std::size_t k = 0; k < all.size(); ++k) {
    if (k > 0 && all[k].token != all[k - 1].token) ++next_id;
    ids[all[k].sentence][all[k].position] = next_id;
  }
  return ids;
}

}  // namespace dragoman::eval
