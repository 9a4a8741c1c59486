// Unicode properties and case mapping through ICU (see unicode.h).
#include "text/unicode.h"

#include <unicode/uchar.h>
#include <unicode/ustring.h>
#include <unicode/utypes.h>

#include <vector>

#include "base/error.h"

namespace dragoman::text::unicode {
namespace {

std::uint32_t category_mask(char32_t c) { return U_MASK(u_charType(static_cast<UChar32>(c))); }

}  // namespace

bool detail::is_space_non_ascii(char32_t c) {
  if (u_charType(static_cast<UChar32>(c)) == U_SPACE_SEPARATOR) return true;
  const UCharDirection dir = u_charDirection(static_cast<UChar32>(c));
  return dir == U_WHITE_SPACE_NEUTRAL || dir == U_BLOCK_SEPARATOR || dir == U_SEGMENT_SEPARATOR;
}

bool is_number(char32_t c) { return (category_mask(c) & U_GC_N_MASK) != 0; }
bool is_punctuation(char32_t c) { return (category_mask(c) & U_GC_P_MASK) != 0; }
bool is_symbol(char32_t c) { return (category_mask(c) & U_GC_S_MASK) != 0; }

std::u32string to_lower(std::u32string_view text) {
  bool ascii = true;
  for (char32_t c : text) {
    if (c >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) {
    std::u32string out(text);
    for (char32_t& c : out) {
      if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
    }
    return out;
  }
  // ICU maps case on UTF-16: UTF-32 -> UTF-16 -> lower -> UTF-32.
  UErrorCode status = U_ZERO_ERROR;
  int32_t utf16_len = 0;
  const auto* src = reinterpret_cast<const UChar32*>(text.data());
  const auto src_len = static_cast<int32_t>(text.size());
  u_strFromUTF32(nullptr, 0, &utf16_len, src, src_len, &status);
  status = U_ZERO_ERROR;
  std::vector<UChar> utf16(static_cast<std::size_t>(utf16_len) + 1);
  u_strFromUTF32(utf16.data(), static_cast<int32_t>(utf16.size()), &utf16_len, src, src_len, &status);
  if (U_FAILURE(status)) throw Error(std::string("unicode::to_lower: ") + u_errorName(status));

  // Lowercasing can lengthen the text (U+0130 -> i + U+0307): measure, then convert.
  status = U_ZERO_ERROR;
  int32_t lower_len = u_strToLower(nullptr, 0, utf16.data(), utf16_len, "", &status);
  std::vector<UChar> lower(static_cast<std::size_t>(lower_len) + 1);
  status = U_ZERO_ERROR;
  u_strToLower(lower.data(), static_cast<int32_t>(lower.size()), utf16.data(), utf16_len, "", &status);
  if (U_FAILURE(status)) throw Error(std::string("unicode::to_lower: ") + u_errorName(status));

  std::u32string out(static_cast<std::size_t>(lower_len), U'\0');
  int32_t out_len = 0;
  status = U_ZERO_ERROR;
  u_strToUTF32(reinterpret_cast<UChar32*>(out.data()), static_cast<int32_t>(out.size()), &out_len, lower.data(),
               lower_len, &status);
  if (U_FAILURE(status) && status != U_STRING_NOT_TERMINATED_WARNING) {
    throw Error(std::string("unicode::to_lower: ") + u_errorName(status));
  }
  out.resize(static_cast<std::size_t>(out_len));
  return out;
}

std::u32string_view rstrip(std::u32string_view text) {
  std::size_t end = text.size();
  while (end > 0 && is_space(text[end - 1])) --end;
  return text.substr(0, end);
}

std::u32string_view strip(std::u32string_view text) {
  std::size_t begin = 0;
  while (begin < text.size() && is_space(text[begin])) ++begin;
  return rstrip(text.substr(begin));
}

}  // namespace dragoman::text::unicode
