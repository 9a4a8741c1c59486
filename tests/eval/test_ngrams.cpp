// Exact n-gram counting on literal examples.
#include <catch2/catch.hpp>

#include "eval/ngrams.h"

using namespace dragoman::eval;

TEST_CASE("count_ngrams counts each distinct n-gram once, sorted", "[ngrams]") {
  const std::u32string s = U"abab";
  const NgramCounts bigrams = count_ngrams(s, 2);  // ab, ba, ab
  REQUIRE(bigrams.size() == 2);
  CHECK(bigrams[0].ngram == U"ab");
  CHECK(bigrams[0].count == 2);
  CHECK(bigrams[1].ngram == U"ba");
  CHECK(bigrams[1].count == 1);
  CHECK(total_count(bigrams) == 3);
  CHECK(count_ngrams(s, 5).empty());
  CHECK(count_ngrams(s, 0).empty());
}

TEST_CASE("max_merge keeps the larger count, clipped_matches the smaller", "[ngrams]") {
  const std::u32string a = U"aab", b = U"abbc", h = U"aaabbbd";
  const NgramCounts merged = max_merge(count_ngrams(a, 1), count_ngrams(b, 1));  // a:2 b:2 c:1
  REQUIRE(merged.size() == 3);
  CHECK(merged[0].count == 2);
  CHECK(merged[1].count == 2);
  CHECK(merged[2].count == 1);
  CHECK(clipped_matches(count_ngrams(h, 1), merged) == 4);  // a:min(3,2) + b:min(3,2)
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
