// Exact n-gram counting for the metrics. A sequence is a std::u32string of symbols: code points
// for chrF's character n-grams (21 bits each), segment-local token ids for word n-grams (32 bits,
// see intern_tokens). An n-gram becomes one 128-bit key that holds its symbols exactly (packed,
// when n * bits fits in 128; otherwise interned across the segment's sequences), so there are no
// hash collisions and no global dictionary: segments can be scored on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dragoman::eval {

__extension__ typedef unsigned __int128 NgramKey;  // __extension__: GCC/Clang builtin, silences -Wpedantic

struct NgramCount {
  NgramKey key;
  std::int64_t count;
};
using NgramCounts = std::vector<NgramCount>;  // sorted by key, each key once

inline constexpr unsigned kCodePointBits = 21;  // U+10FFFF < 2^21
inline constexpr unsigned kTokenIdBits = 32;

// The keys of the order-n n-grams of each sequence, comparable across the sequences of one call
// (equal keys exactly when the n-grams are equal). Symbols must be < 2^bits_per_symbol.
std::vector<std::vector<NgramKey>> ngram_keys(const std::vector<std::u32string_view>& sequences, std::size_t n,
                                              unsigned bits_per_symbol);

// Sorts and counts keys.
NgramCounts count_keys(std::vector<NgramKey> keys);

// Python's Counter union `a | b`: per n-gram the larger count (the multi-reference merge).
NgramCounts max_merge(const NgramCounts& a, const NgramCounts& b);

// Sum over n-grams of min(hyp count, ref count): the clipped matches.
std::int64_t clipped_matches(const NgramCounts& hyp, const NgramCounts& ref);

std::int64_t total_count(const NgramCounts& counts);

// Maps the tokens of several sentences to ids that are equal exactly when the tokens are equal:
// ids[s][i] is the id of tokens[s][i]. Ids are only meaningful within one call.
std::vector<std::u32string> intern_tokens(const std::vector<std::vector<std::u32string_view>>& tokens);

}  // namespace dragoman::eval
