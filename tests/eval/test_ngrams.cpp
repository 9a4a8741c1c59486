// Exact n-gram counting on literal examples, packed and interned keys alike.
#include <catch2/catch.hpp>

#include <algorithm>

#include "eval/ngrams.h"

using namespace dragoman::eval;

namespace {

NgramCounts counts_of(std::u32string_view s, std::size_t n, unsigned bits = kCodePointBits) {
  return count_keys(ngram_keys({s}, n, bits)[0]);
}

}  // namespace

TEST_CASE("count_keys counts each distinct n-gram once, sorted", "[ngrams]") {
  const NgramCounts bigrams = counts_of(U"abab", 2);  // ab, ba, ab
  REQUIRE(bigrams.size() == 2);
  CHECK(bigrams[0].key < bigrams[1].key);
  CHECK(bigrams[0].count + bigrams[1].count == 3);
  CHECK(total_count(bigrams) == 3);
  CHECK(counts_of(U"abab", 5).empty());
  CHECK(counts_of(U"abab", 0).empty());
}

TEST_CASE("max_merge keeps the larger count, clipped_matches the smaller", "[ngrams]") {
  const auto keys = ngram_keys({U"aab", U"abbc", U"aaabbbd"}, 1, kCodePointBits);
  const NgramCounts merged = max_merge(count_keys(keys[0]), count_keys(keys[1]));  // a:2 b:2 c:1
  REQUIRE(merged.size() == 3);
  CHECK(merged[0].count == 2);
  CHECK(merged[1].count == 2);
  CHECK(merged[2].count == 1);
  CHECK(clipped_matches(count_keys(keys[2]), merged) == 4);  // a:min(3,2) + b:min(3,2)
}

TEST_CASE("orders too long to pack are interned with the same result", "[ngrams]") {
  // 7 code points need 147 bits: interned; 6 need 126: packed. 17 windows of 7 with "abcdefg"
  // three times: 15 distinct; 18 windows of 6 with "abcdef" and "bcdefg" three times each: 14.
  const std::u32string s = U"abcdefgXabcdefgYabcdefg";
  const NgramCounts sevens = counts_of(s, 7);
  CHECK(sevens.size() == 15);
  CHECK(total_count(sevens) == 17);
  std::int64_t most = 0;
  for (const auto& c : sevens) most = std::max(most, c.count);
  CHECK(most == 3);
  CHECK(counts_of(s, 6).size() == 14);
  const auto keys = ngram_keys({U"abcdefgh", U"zabcdefgh"}, 8, kCodePointBits);
  CHECK(clipped_matches(count_keys(keys[0]), count_keys(keys[1])) == 1);
  // Five 32-bit token ids do not fit either.
  const auto ids = ngram_keys({U"\x01\x02\x03\x04\x05", U"\x09\x01\x02\x03\x04\x05"}, 5, kTokenIdBits);
  CHECK(clipped_matches(count_keys(ids[0]), count_keys(ids[1])) == 1);
}

TEST_CASE("intern_tokens gives equal ids exactly to equal tokens", "[ngrams]") {
  const std::u32string x = U"der", y = U"die", z = U"der";
  const auto ids = intern_tokens({{x, y}, {z, y, x}});
  REQUIRE(ids.size() == 2);
  CHECK(ids[0][0] == ids[1][0]);
  CHECK(ids[0][0] == ids[1][2]);
  CHECK(ids[0][1] == ids[1][1]);
  CHECK(ids[0][0] != ids[0][1]);
}
