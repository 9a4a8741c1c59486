// Unicode character properties and case mapping, with Python's str semantics where the metrics
// need them: sacreBLEU is Python, so "whitespace" is what str.split() splits on and "lowercase"
// is str.lower(). Properties come from ICU's Unicode database (libicu), not hand-typed tables.
#pragma once

#include <string>
#include <string_view>

namespace dragoman::text::unicode {

// Python's str.isspace(): general category Zs, or bidirectional class WS, B or S. This is the set
// str.split(), str.strip() and str.rstrip() use (\t \n \v \f \r \x1c-\x1f space \x85 \xa0 \u1680
// \u2000-\u200a \u2028 \u2029 \u202f \u205f \u3000).
namespace detail {
bool is_space_non_ascii(char32_t c);
}
inline bool is_space(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return detail::is_space_non_ascii(c);
}

// General categories used by sacreBLEU's intl tokenizer (regex's \p{N}, \p{P}, \p{S}).
bool is_number(char32_t c);       // Nd, Nl, No
bool is_punctuation(char32_t c);  // Pc, Pd, Ps, Pe, Pi, Pf, Po
bool is_symbol(char32_t c);       // Sm, Sc, Sk, So

// Python's str.lower(): full Unicode lowercase mapping (one code point may become two, as
// U+0130 does) with the final-sigma rule, locale-independent.
std::u32string to_lower(std::u32string_view text);

// Python's str.split() with no arguments: the maximal runs of non-whitespace, as views into text.
template <typename Out>
void split(std::u32string_view text, Out&& emit) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    while (i < n && is_space(text[i])) ++i;
    const std::size_t start = i;
    while (i < n && !is_space(text[i])) ++i;
    if (i > start) emit(text.substr(start, i - start));
  }
}

// Python's str.rstrip() and str.strip() with no arguments.
std::u32string_view rstrip(std::u32string_view text);
std::u32string_view strip(std::u32string_view text);

}  // namespace dragoman::text::unicode
