// Exact n-gram counting for the metrics. A sequence is a std::u32string of symbols: code points
// for chrF's character n-grams, segment-local token ids for word n-grams (see intern_tokens).
// Counts are sorted lists of (n-gram, count), compared by content, so there are no hash
// collisions and no global dictionary (segments can be scored on any thread).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dragoman::eval {

struct NgramCount {
  std::u32string_view ngram;  // view into the counted sequence
  std::int64_t count;
};
using NgramCounts = std::vector<NgramCount>;  // sorted by ngram, each ngram once

// The n-grams of order `n` of `sequence`, counted. Views point into `sequence`.
NgramCounts count_ngrams(std::u32string_view sequence, std::size_t n);

// Python's Counter union `a | b`: per n-gram the larger count (the multi-reference merge).
NgramCounts max_merge(const NgramCounts& a, const NgramCounts& b);

// Sum over n-grams of min(hyp count, ref count): the clipped matches.
std::int64_t clipped_matches(const NgramCounts& hyp, const NgramCounts& ref);

std::int64_t total_count(const NgramCounts& counts);

// Maps the tokens of several sentences to ids that are equal exactly when the tokens are equal:
// ids[s][i] is the id of tokens[s][i]. Ids are only meaningful within one call.
std::vector<std::u32string> intern_tokens(const std::vector<std::vector<std::u32string_view>>& tokens);

}  // namespace dragoman::eval
