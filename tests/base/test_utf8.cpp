// UTF-8 decoding is as strict as Python's, and encoding round-trips.
#include <catch2/catch.hpp>

#include "base/error.h"
#include <tuple>
#include <vector>

#include "base/utf8.h"

using dragoman::utf8::decode;
using dragoman::utf8::encode;
using dragoman::utf8::find_invalid;

TEST_CASE("utf8 decodes one- to four-byte sequences", "[utf8]") {
  CHECK(decode("a") == U"a");
  CHECK(decode("\xC3\xA4") == U"\u00E4");              // ä
  CHECK(decode("\xE2\x82\xAC") == U"\u20AC");          // €
  CHECK(decode("\xF0\x9F\x98\x80") == U"\U0001F600");  // 😀
  CHECK(decode("") == U"");
}

TEST_CASE("utf8 encode round-trips every kind of code point", "[utf8]") {
  const std::u32string text = U"a\u007F\u0080\u07FF\u0800\uFFFD\U00010000\U0010FFFF";
  CHECK(decode(encode(text)) == text);
}

TEST_CASE("utf8 rejects what Python's strict codec rejects", "[utf8]") {
  CHECK(find_invalid("abc") == std::string::npos);
  CHECK(find_invalid("ab\x80") == 2);            // lone continuation byte
  CHECK(find_invalid("\xC0\xAF") == 0);          // overlong '/'
  CHECK(find_invalid("\xC1\xBF") == 0);          // overlong
  CHECK(find_invalid("\xE0\x80\xAF") == 0);      // overlong 3-byte
  CHECK(find_invalid("\xED\xA0\x80") == 0);      // surrogate U+D800
  CHECK(find_invalid("\xF0\x80\x80\xAF") == 0);  // overlong 4-byte
  CHECK(find_invalid("\xF4\x90\x80\x80") == 0);  // above U+10FFFF
  CHECK(find_invalid("\xF5\x80\x80\x80") == 0);  // invalid lead byte
  CHECK(find_invalid("x\xE2\x82") == 1);         // truncated
  CHECK(find_invalid("\xC3\xA4\xC3") == 2);      // truncated after a valid one
  CHECK_THROWS_AS(decode("\xFF"), dragoman::Error);
}

TEST_CASE("utf8 replace_invalid replaces maximal subparts with U+FFFD as Python does", "[utf8]") {
  using dragoman::utf8::replace_invalid;
  // Expected values: bytes.decode("utf-8", errors="replace") in Python 3.11.
  const std::string r = "\xEF\xBF\xBD";
  const std::vector<std::tuple<std::string, std::string, std::size_t>> cases = {
      {"abc", "abc", 0},
      {"\xFF", r, 1},
      {"a\xFF" "b", "a" + r + "b", 1},
      {"\xE2\x82", r, 1},                           // truncated: one replacement
      {"\xE2\x82x", r + "x", 1},
      {"\xED\xA0\x80", r + r + r, 3},               // surrogate: each byte
      {"\xF0\x9F\x98", r, 1},
      {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80", 0},  // valid
      {"\xC0\xAF", r + r, 2},                       // overlong
      {"\xF4\x90\x80\x80", r + r + r + r, 4},       // above U+10FFFF
      {"\xE0\x80\x80", r + r + r, 3},
      {"\x80\x80", r + r, 2},
      {"\xF0\x9F", r, 1},
  };
  for (const auto& [in, expected, count] : cases) {
    INFO("input of " << in.size() << " bytes");
    std::size_t replaced = 99;
    CHECK(replace_invalid(in, &replaced) == expected);
    CHECK(replaced == count);
    CHECK(find_invalid(replace_invalid(in)) == std::string::npos);
  }
}
