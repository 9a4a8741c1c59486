// Python str semantics for whitespace, categories and lowercasing, checked against literal
// examples and against Python itself (tokenize.json's "split" and "lower" lists).
#include <catch2/catch.hpp>

#include "base/utf8.h"
#include "eval/fixtures.h"
#include "text/unicode.h"

using namespace dragoman;
using namespace dragoman::text;

namespace {

std::vector<std::string> split_utf8(const std::string& text) {
  std::vector<std::string> out;
  const std::u32string t = utf8::decode(text);
  unicode::split(t, [&](std::u32string_view token) { out.push_back(utf8::encode(token)); });
  return out;
}

}  // namespace

TEST_CASE("is_space is Python's str.isspace", "[unicode]") {
  for (char32_t c :
       std::u32string(U"\t\n\v\f\r\x1c\x1d\x1e\x1f \u0085\u00A0\u1680\u2000\u200A\u2028\u2029\u202F\u205F\u3000")) {
    INFO("U+" << std::hex << static_cast<unsigned>(c));
    CHECK(unicode::is_space(c));
  }
  for (char32_t c : std::u32string(U"a0_\u200B\uFEFF\u180E\u00AD")) {
    INFO("U+" << std::hex << static_cast<unsigned>(c));
    CHECK_FALSE(unicode::is_space(c));
  }
}

TEST_CASE("general categories come from the Unicode database", "[unicode]") {
  CHECK(unicode::is_number(U'7'));
  CHECK(unicode::is_number(U'\u0663'));  // ARABIC-INDIC DIGIT THREE (Nd)
  CHECK(unicode::is_number(U'\u2167'));  // ROMAN NUMERAL EIGHT (Nl)
  CHECK(unicode::is_number(U'\u00BD'));  // ½ (No)
  CHECK(unicode::is_punctuation(U'.'));
  CHECK(unicode::is_punctuation(U'\u00BF'));  // ¿
  CHECK(unicode::is_punctuation(U'\u201E'));  // „
  CHECK(unicode::is_punctuation(U'_'));       // Pc
  CHECK(unicode::is_symbol(U'$'));
  CHECK(unicode::is_symbol(U'\u20AC'));  // €
  CHECK(unicode::is_symbol(U'+'));
  CHECK(unicode::is_symbol(U'^'));  // Sk
  CHECK_FALSE(unicode::is_punctuation(U'a'));
  CHECK_FALSE(unicode::is_symbol(U'-'));  // Pd, not a symbol
}

TEST_CASE("split, strip and rstrip follow Python", "[unicode]") {
  CHECK(split_utf8("  a b\t c  ") == std::vector<std::string>{"a", "b", "c"});
  CHECK(split_utf8("") == std::vector<std::string>{});
  CHECK(split_utf8("\xC2\xA0x\xE3\x80\x80y") == std::vector<std::string>{"x", "y"});
  CHECK(unicode::rstrip(U" a b \u3000") == U" a b");
  CHECK(unicode::strip(U"\u2003 a b \n") == U"a b");
  // (The fixture in a variable: a range-for over a member of a temporary would read it after its end.)
  const auto fixture = test::read_json_fixture("bleu/tokenize.json");
  for (const auto& pair : fixture.at("split")) {
    const std::string input = pair.at(0).get<std::string>();
    INFO("input: " << input);
    CHECK(split_utf8(input) == pair.at(1).get<std::vector<std::string>>());
  }
}

TEST_CASE("to_lower is Python's str.lower", "[unicode]") {
  CHECK(unicode::to_lower(U"ABC def") == U"abc def");
  CHECK(unicode::to_lower(U"\u0130") == U"i\u0307");                         // İ -> i + combining dot: longer
  CHECK(unicode::to_lower(U"\u03A3\u0391\u03A3") == U"\u03C3\u03B1\u03C2");  // ΣΑΣ -> σας
  CHECK(unicode::to_lower(U"\u1E9E") == U"\u00DF");                          // ẞ -> ß
  // (The fixture in a variable: a range-for over a member of a temporary would read it after its end.)
  const auto fixture = test::read_json_fixture("bleu/tokenize.json");
  for (const auto& pair : fixture.at("lower")) {
    const std::string input = pair.at(0).get<std::string>();
    INFO("input: " << input);
    CHECK(utf8::encode(unicode::to_lower(utf8::decode(input))) == pair.at(1).get<std::string>());
  }
}
