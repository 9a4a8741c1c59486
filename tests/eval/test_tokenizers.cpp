// Each tokenizer gives sacreBLEU's output on the tricky strings of fixtures/bleu/tokenize.json,
// and a few literal examples say what the rules are.
#include <catch2/catch.hpp>

#include "eval/fixtures.h"
#include "eval/tokenizers.h"

using namespace dragoman;
using namespace dragoman::eval;

TEST_CASE("13a tokenizer on literal examples", "[tokenizers]") {
  CHECK(tokenize_utf8(Tokenizer::k13a, "Hello, world!") == "Hello , world !");
  CHECK(tokenize_utf8(Tokenizer::k13a, "It costs $3.50, not 3,000.") == "It costs $ 3.50 , not 3,000 .");
  CHECK(tokenize_utf8(Tokenizer::k13a, "pages 3-4") == "pages 3 - 4");
  CHECK(tokenize_utf8(Tokenizer::k13a, "a &amp; b &lt;c&gt;") == "a & b < c >");
  CHECK(tokenize_utf8(Tokenizer::k13a, "x<skipped>y") == "xy");
  CHECK(tokenize_utf8(Tokenizer::k13a, "don't") == "don't");
}

TEST_CASE("intl tokenizer separates Unicode punctuation and symbols", "[tokenizers]") {
  CHECK(tokenize_utf8(Tokenizer::kIntl, "„Hallo“, sagte er.") == "„ Hallo “ , sagte er .");
  CHECK(tokenize_utf8(Tokenizer::kIntl, "1.000,50 €") == "1.000,50 €");
  CHECK(tokenize_utf8(Tokenizer::kIntl, "Year 2017.") == "Year 2017.");  // mteval-v14's quirk
}

TEST_CASE("zh and char tokenizers", "[tokenizers]") {
  CHECK(tokenize_utf8(Tokenizer::kZh, "我爱NLP。") == "我 爱 NLP 。");
  CHECK(tokenize_utf8(Tokenizer::kChar, "ab c") == "a b   c");
  CHECK(tokenize_utf8(Tokenizer::kNone, " as is ") == " as is ");
  CHECK_THROWS_WITH(parse_tokenizer("moses"), Catch::Contains("expected one of 13a, intl, zh, char, none"));
}

TEST_CASE("every tokenizer equals sacreBLEU's on the fixture strings", "[tokenizers]") {
  const nlohmann::json fixture = test::read_json_fixture("bleu/tokenize.json");
  for (const char* name : {"13a", "intl", "zh", "char", "none"}) {
    const Tokenizer tokenizer = parse_tokenizer(name);
    const auto& pairs = fixture.at(name);
    CHECK(pairs.size() >= 50);
    for (const auto& pair : pairs) {
      const std::string input = pair.at(0).get<std::string>();
      INFO(name << " tokenizer, input: " << input);
      CHECK(tokenize_utf8(tokenizer, input) == pair.at(1).get<std::string>());
    }
  }
}
