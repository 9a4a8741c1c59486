// sacreBLEU's tokenizers (see tokenizers.h). Each regular expression sacreBLEU applies matches a
// fixed one or two characters, so re.sub's semantics (leftmost match, scan resumes after the
// match, no overlaps) are reproduced exactly by the scans in substitute_pairs().
#include "eval/tokenizers.h"

#include "base/error.h"
#include "base/utf8.h"
#include "text/unicode.h"

namespace dragoman::eval {
namespace {

// Python's str.replace(from, to): non-overlapping, left to right.
void replace_all(std::u32string& s, std::u32string_view from, std::u32string_view to) {
  if (s.find(from) == std::u32string::npos) return;
  std::u32string out;
  out.reserve(s.size());
  std::size_t pos = 0;
  for (std::size_t hit; (hit = s.find(from, pos)) != std::u32string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos).append(to);
  }
  out.append(s, pos, std::u32string::npos);
  s.swap(out);
}

// re.sub(r'(A)(B)', replacement, s) where A and B each match one character. `emit(out, a, b)`
// writes the four characters of the replacement of a match (a, b) and returns the end.
template <typename First, typename Second, typename Emit>
std::u32string substitute_pairs(std::u32string_view s, First first, Second second, Emit emit) {
  std::u32string out(s.size() * 2, U'\0');  // a 2-character match becomes 4 characters
  char32_t* o = out.data();
  std::size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      o = emit(o, s[i], s[i + 1]);
      i += 2;
    } else {
      *o++ = s[i++];
    }
  }
  out.resize(static_cast<std::size_t>(o - out.data()));
  return out;
}

// r'\1 \2 ' and r' \1 \2'.
char32_t* emit_a_space_b_space(char32_t* o, char32_t a, char32_t b) {
  o[0] = a;
  o[1] = ' ';
  o[2] = b;
  o[3] = ' ';
  return o + 4;
}
char32_t* emit_space_a_space_b(char32_t* o, char32_t a, char32_t b) {
  o[0] = ' ';
  o[1] = a;
  o[2] = ' ';
  o[3] = b;
  return o + 4;
}

// r' \1 ' for every character matching `pred`.
template <typename Pred>
std::u32string space_around(std::u32string_view s, Pred pred) {
  std::u32string out(s.size() * 3, U'\0');
  char32_t* o = out.data();
  for (char32_t c : s) {
    if (pred(c)) {
      o[0] = ' ';
      o[1] = c;
      o[2] = ' ';
      o += 3;
    } else {
      *o++ = c;
    }
  }
  out.resize(static_cast<std::size_t>(o - out.data()));
  return out;
}

// ' '.join(s.split())
std::u32string normalize_spaces(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  text::unicode::split(s, [&](std::u32string_view token) {
    if (!out.empty()) out.push_back(' ');
    out.append(token);
  });
  return out;
}

bool is_ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_dot_or_comma(char32_t c) { return c == '.' || c == ','; }

// 13a's first regex: r'([\{-\~\[-\` -\&\(-\+\:-\@\/])' -> r' \1 ', i.e. ASCII punctuation and
// symbols (and space) except the apostrophe, comma, hyphen and period.
bool is_13a_separated(char32_t c) {
  return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2B) ||
         (c >= 0x3A && c <= 0x40) || c == 0x2F;
}

// sacreBLEU's TokenizerRegexp: the language-dependent part of 13a, shared with zh.
std::u32string tokenize_regexp(std::u32string_view line) {
  const std::u32string step1 = space_around(line, is_13a_separated);
  const auto not_digit = [](char32_t c) { return !is_ascii_digit(c); };
  // Period and comma unless preceded by a digit; unless followed by a digit; dash after a digit.
  std::u32string s = substitute_pairs(step1, not_digit, is_dot_or_comma, emit_a_space_b_space);
  s = substitute_pairs(s, is_dot_or_comma, not_digit, emit_space_a_space_b);
  s = substitute_pairs(
      s, is_ascii_digit, [](char32_t c) { return c == '-'; }, emit_a_space_b_space);
  return normalize_spaces(s);
}

std::u32string tokenize_13a(std::u32string_view input) {
  std::u32string line(input);
  replace_all(line, U"<skipped>", U"");
  replace_all(line, U"-\n", U"");
  replace_all(line, U"\n", U" ");
  if (line.find(U'&') != std::u32string::npos) {
    replace_all(line, U"&quot;", U"\"");
    replace_all(line, U"&amp;", U"&");
    replace_all(line, U"&lt;", U"<");
    replace_all(line, U"&gt;", U">");
  }
  std::u32string padded;
  padded.reserve(line.size() + 2);
  padded.push_back(' ');
  padded.append(line);
  padded.push_back(' ');
  return tokenize_regexp(padded);
}

std::u32string tokenize_intl(std::u32string_view line) {
  const auto not_number = [](char32_t c) { return !text::unicode::is_number(c); };
  std::u32string s = substitute_pairs(line, not_number, text::unicode::is_punctuation, emit_a_space_b_space);
  s = substitute_pairs(s, text::unicode::is_punctuation, not_number, emit_space_a_space_b);
  return normalize_spaces(space_around(s, text::unicode::is_symbol));
}

// sacreBLEU's _UCODE_RANGES as they really behave. Two of its ranges are written
// '\u20000'..'\u2a6d6' and '\u2f800'..'\u2fa1d': Python reads '\u2000' + '0', so for a single
// character the comparison start <= c <= end holds for U+2001..U+2A6D and U+2F81..U+2FA1
// (general punctuation, currency, arrows, maths, ...), and never for the intended
// supplementary-plane ideographs. sacreBLEU's scores depend on it, so we reproduce it.
bool is_zh_char(char32_t c) {
  static constexpr char32_t kRanges[][2] = {
      {0x3400, 0x4DB5}, {0x4E00, 0x9FA5}, {0x9FA6, 0x9FBB}, {0xF900, 0xFA2D}, {0xFA30, 0xFA6A}, {0xFA70, 0xFAD9},
      {0x2001, 0x2A6D}, {0x2F81, 0x2FA1}, {0xFF00, 0xFFEF}, {0x2E80, 0x2EFF}, {0x3000, 0x303F}, {0x31C0, 0x31EF},
      {0x2F00, 0x2FDF}, {0x2FF0, 0x2FFF}, {0x3100, 0x312F}, {0x31A0, 0x31BF}, {0xFE10, 0xFE1F}, {0xFE30, 0xFE4F},
      {0x2600, 0x26FF}, {0x2700, 0x27BF}, {0x3200, 0x32FF}, {0x3300, 0x33FF},
  };
  if (c < 0x2001) return false;
  for (const auto& range : kRanges) {
    if (c >= range[0] && c <= range[1]) return true;
  }
  return false;
}

std::u32string tokenize_zh(std::u32string_view input) {
  const std::u32string_view line = text::unicode::strip(input);
  return tokenize_regexp(space_around(line, is_zh_char));
}

std::u32string tokenize_char(std::u32string_view line) {
  std::u32string out;
  out.reserve(line.size() * 2);
  for (char32_t c : line) {
    if (!out.empty()) out.push_back(' ');
    out.push_back(c);
  }
  return out;
}

}  // namespace

Tokenizer parse_tokenizer(std::string_view name) {
  if (name == "13a") return Tokenizer::k13a;
  if (name == "intl") return Tokenizer::kIntl;
  if (name == "zh") return Tokenizer::kZh;
  if (name == "char") return Tokenizer::kChar;
  if (name == "none") return Tokenizer::kNone;
  throw Error("unknown tokenizer '" + std::string(name) + "' (expected one of 13a, intl, zh, char, none)");
}

const char* tokenizer_name(Tokenizer tokenizer) {
  switch (tokenizer) {
    case Tokenizer::k13a: return "13a";
    case Tokenizer::kIntl: return "intl";
    case Tokenizer::kZh: return "zh";
    case Tokenizer::kChar: return "char";
    case Tokenizer::kNone: return "none";
  }
  return "?";
}

std::u32string tokenize(Tokenizer tokenizer, std::u32string_view line) {
  switch (tokenizer) {
    case Tokenizer::k13a: return tokenize_13a(line);
    case Tokenizer::kIntl: return tokenize_intl(line);
    case Tokenizer::kZh: return tokenize_zh(line);
    case Tokenizer::kChar: return tokenize_char(line);
    case Tokenizer::kNone: return std::u32string(line);
  }
  return std::u32string(line);
}

std::string tokenize_utf8(Tokenizer tokenizer, std::string_view line) {
  return utf8::encode(tokenize(tokenizer, utf8::decode(line)));
}

}  // namespace dragoman::eval
