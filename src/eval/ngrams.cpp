// Exact n-gram counting (see ngrams.h).
#include "eval/ngrams.h"

#include <algorithm>
#include <numeric>

namespace dragoman::eval {

NgramCounts count_ngrams(std::u32string_view sequence, std::size_t n) {
  NgramCounts counts;
  if (n == 0 || sequence.size() < n) return counts;
  std::vector<std::u32string_view> all;
  all.reserve(sequence.size() - n + 1);
  for (std::size_t i = 0; i + n <= sequence.size(); ++i) all.push_back(sequence.substr(i, n));
  std::sort(all.begin(), all.end());
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i + 1;
    while (j < all.size() && all[j] == all[i]) ++j;
    counts.push_back({all[i], static_cast<std::int64_t>(j - i)});
    i = j;
  }
  return counts;
}

NgramCounts max_merge(const NgramCounts& a, const NgramCounts& b) {
  NgramCounts out;
  out.reserve(a.size() + b.size());
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].ngram < b[j].ngram)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || b[j].ngram < a[i].ngram) {
      out.push_back(b[j++]);
    } else {
      out.push_back({a[i].ngram, std::max(a[i].count, b[j].count)});
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
    if (hyp[i].ngram < ref[j].ngram) {
      ++i;
    } else if (ref[j].ngram < hyp[i].ngram) {
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
