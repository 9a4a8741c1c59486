// The Moses tokenizer (see moses_tokenizer.h). Each of sacremoses' regular expressions matches a
// fixed one to three characters or a literal, so re.sub's semantics (leftmost match, the scan
// resumes after the match, no overlaps; a lookahead is not consumed) are reproduced by the scans
// below, one per expression, in sacremoses' order.
#include "eval/moses_tokenizer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "eval/moses_data.h"
#include "text/unicode.h"

namespace dragoman::eval {
namespace {

bool in_class(char32_t c, const moses::CodeRange* table, std::size_t size) {
  const moses::CodeRange* end = table + size;
  const moses::CodeRange* it =
      std::upper_bound(table, end, c, [](char32_t x, const moses::CodeRange& r) { return x < r.first; });
  return it != table && c <= (it - 1)->last;
}
bool is_n(char32_t c) { return in_class(c, moses::kIsN, moses::kIsNSize); }
bool is_alnum(char32_t c) { return in_class(c, moses::kIsAlnum, moses::kIsAlnumSize); }
bool is_alpha(char32_t c) { return in_class(c, moses::kIsAlpha, moses::kIsAlphaSize); }
bool is_lower(char32_t c) { return in_class(c, moses::kIsLower, moses::kIsLowerSize); }

// re.sub(r"\s+", " ", s).
std::u32string collapse_spaces(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  bool in_run = false;
  for (const char32_t c : s) {
    if (text::unicode::is_space(c)) {
      if (!in_run) out += U' ';
      in_run = true;
    } else {
      out += c;
      in_run = false;
    }
  }
  return out;
}

// re.sub(literal, replacement, s) for a literal pattern (Python's str.replace).
std::u32string replace_literal(std::u32string_view s, std::u32string_view from, std::u32string_view to) {
  std::u32string out;
  out.reserve(s.size());
  std::size_t pos = 0;
  for (std::size_t hit; (hit = s.find(from, pos)) != std::u32string_view::npos; pos = hit + from.size()) {
    out.append(s.substr(pos, hit - pos)).append(to);
  }
  out.append(s.substr(pos));
  return out;
}

// re.sub(r"(A)(B)", ..., s) for one character each: emit(out, a, b) appends the replacement.
template <typename First, typename Second, typename Emit>
std::u32string substitute_pairs(std::u32string_view s, First first, Second second, Emit emit) {
  std::u32string out;
  out.reserve(s.size() + 16);
  std::size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// re.sub(r"(A)'(B)", ..., s), one character each side of the apostrophe.
template <typename First, typename Second>
std::u32string substitute_apostrophes(std::u32string_view s, First first, Second second, std::u32string_view middle) {
  std::u32string out;
  out.reserve(s.size() + 16);
  std::size_t i = 0;
  while (i < s.size()) {
    if (i + 2 < s.size() && s[i + 1] == U'\'' && first(s[i]) && second(s[i + 2])) {
      out += s[i];
      out += middle;
      out += s[i + 2];
      i += 3;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// sacremoses' replace_multidots: r"\.([\.]+)" -> r" DOTMULTI\1", then, while "DOTMULTI." is left,
// r"DOTMULTI\.([^\.])" -> r"DOTDOTMULTI \1" and "DOTMULTI." -> "DOTDOTMULTI".
std::u32string replace_multidots(std::u32string_view s) {
  std::u32string text;
  text.reserve(s.size() + 16);
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == U'.' && i + 1 < s.size() && s[i + 1] == U'.') {
      std::size_t end = i + 1;
      while (end < s.size() && s[end] == U'.') ++end;
      text += U" DOTMULTI";
      text.append(s.substr(i + 1, end - i - 1));
      i = end;
    } else {
      text += s[i++];
    }
  }
  static constexpr std::u32string_view kDotMulti = U"DOTMULTI.";
  while (text.find(kDotMulti) != std::u32string::npos) {
    std::u32string next;
    next.reserve(text.size() + 16);
    std::size_t pos = 0;
    for (std::size_t hit = text.find(kDotMulti); hit != std::u32string::npos; hit = text.find(kDotMulti, pos)) {
      const std::size_t after = hit + kDotMulti.size();
      if (after < text.size() && text[after] != U'.') {
        next.append(text, pos, hit - pos).append(U"DOTDOTMULTI ");
        next += text[after];
        pos = after + 1;
      } else {
        next.append(text, pos, hit + 1 - pos);  // no match here: the scan moves on one character
        pos = hit + 1;
      }
    }
    next.append(text, pos, std::u32string::npos);
    text = replace_literal(next, kDotMulti, U"DOTDOTMULTI");
  }
  return text;
}

// sacremoses' restore_multidots.
std::u32string restore_multidots(std::u32string text) {
  while (text.find(U"DOTDOTMULTI") != std::u32string::npos) text = replace_literal(text, U"DOTDOTMULTI", U"DOTMULTI.");
  return replace_literal(text, U"DOTMULTI", U".");
}

// The XML escapes of escape_xml, one character at a time (none of the replacements contains a
// character a later one replaces, '&' being first).
std::u32string escape_xml(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size() + 16);
  for (const char32_t c : s) {
    switch (c) {
      case U'&': out += U"&amp;"; break;
      case U'|': out += U"&#124;"; break;
      case U'<': out += U"&lt;"; break;
      case U'>': out += U"&gt;"; break;
      case U'\'': out += U"&apos;"; break;
      case U'"': out += U"&quot;"; break;
      case U'[': out += U"&#91;"; break;
      case U']': out += U"&#93;"; break;
      default: out += c;
    }
  }
  return out;
}

// The tokens joined by single spaces (str.split() then " ".join).
std::u32string join_tokens(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  text::unicode::split(s, [&](std::u32string_view token) {
    if (!out.empty()) out += U' ';
    out.append(token);
  });
  return out;
}

// The prefix list of a language; sacremoses falls back to English for one it has no list for.
const char* prefix_lines(const std::string& lang) {
  const char* english = nullptr;
  for (std::size_t i = 0; i < moses::kPrefixesSize; ++i) {
    if (lang == moses::kPrefixes[i].lang) return moses::kPrefixes[i].lines;
    if (std::string_view(moses::kPrefixes[i].lang) == "en") english = moses::kPrefixes[i].lines;
  }
  return english;
}

}  // namespace

bool MosesTokenizer::has_prefixes(const std::string& lang) {
  for (std::size_t i = 0; i < moses::kPrefixesSize; ++i) {
    if (lang == moses::kPrefixes[i].lang) return true;
  }
  return false;
}

MosesTokenizer::MosesTokenizer(std::string lang) : lang_(std::move(lang)) {
  const std::u32string lines = utf8::decode(prefix_lines(lang_));
  std::size_t start = 0;
  while (start <= lines.size()) {
    std::size_t end = lines.find(U'\n', start);
    if (end == std::u32string::npos) end = lines.size();
    const std::u32string word = lines.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    prefixes_.insert(word);
    // has_numeric_only: whitespace then "#NUMERIC_ONLY#"; the prefix is what precedes the last space.
    const std::size_t mark = word.find(U"#NUMERIC_ONLY#");
    if (mark != std::u32string::npos && mark > 0 && text::unicode::is_space(word[mark - 1])) {
      const std::size_t space = word.rfind(U' ');
      numeric_only_.insert(space == std::u32string::npos ? std::u32string() : word.substr(0, space));
    }
  }
}

std::u32string MosesTokenizer::nonbreaking_prefixes(std::u32string_view text) const {
  std::vector<std::u32string> tokens;
  text::unicode::split(text, [&](std::u32string_view token) { tokens.emplace_back(token); });
  const std::size_t n = tokens.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::u32string& token = tokens[i];
    // r"^(\S+)\.$": a token of two or more characters ending in '.'.
    if (token.size() < 2 || token.back() != U'.') continue;
    const std::u32string prefix = token.substr(0, token.size() - 1);
    const bool dotted_word =
        prefix.find(U'.') != std::u32string::npos && std::any_of(prefix.begin(), prefix.end(), is_alpha);
    const bool numeric_only = numeric_only_.count(prefix) != 0;
    const bool listed = prefixes_.count(prefix) != 0 && !numeric_only;
    const bool lower_next = i + 1 != n && !tokens[i + 1].empty() && is_lower(tokens[i + 1][0]);
    if (dotted_word || listed || lower_next) continue;
    if (numeric_only && i + 1 < n && !tokens[i + 1].empty() && tokens[i + 1][0] >= U'0' && tokens[i + 1][0] <= U'9') {
      continue;
    }
    tokens[i] = prefix + U" .";
  }
  std::u32string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += U' ';
    out += tokens[i];
  }
  return out;
}

std::u32string MosesTokenizer::tokenize(std::u32string_view input, bool aggressive_dash_splits, bool escape) const {
  // De-duplicate spaces, remove ASCII control characters, strip.
  std::u32string text = collapse_spaces(input);
  text.erase(std::remove_if(text.begin(), text.end(), [](char32_t c) { return c <= 0x1F; }), text.end());
  text = std::u32string(text::unicode::strip(text));
  // PAD_NOT_ISALNUM: r"([^{IsAlnum}\s\.'\`\,\-])" -> r" \1 ".
  {
    std::u32string padded;
    padded.reserve(text.size() + 16);
    for (const char32_t c : text) {
      const bool kept =
          is_alnum(c) || text::unicode::is_space(c) || c == U'.' || c == U'\'' || c == U'`' || c == U',' || c == U'-';
      if (kept) {
        padded += c;
      } else {
        padded += U' ';
        padded += c;
        padded += U' ';
      }
    }
    text.swap(padded);
  }
  // AGGRESSIVE_HYPHEN_SPLIT: r"([{alphanum}])\-(?=[{alphanum}])" -> r"\1 @-@ ".
  if (aggressive_dash_splits) {
    std::u32string split;
    split.reserve(text.size() + 16);
    for (std::size_t i = 0; i < text.size();) {
      if (i + 2 < text.size() && text[i + 1] == U'-' && is_alnum(text[i]) && is_alnum(text[i + 2])) {
        split += text[i];
        split += U" @-@ ";
        i += 2;
      } else {
        split += text[i++];
      }
    }
    text.swap(split);
  }
  text = replace_multidots(text);
  // COMMA_SEPARATE_1..3: r"([^{IsN}])[,]" -> r"\1 , ", r"[,]([^{IsN}])" -> r" , \1",
  // r"([{IsN}])[,]$" -> r"\1 , ".
  const auto is_comma = [](char32_t c) { return c == U','; };
  const auto not_n = [](char32_t c) { return !is_n(c); };
  text = substitute_pairs(text, not_n, is_comma, [](std::u32string& out, char32_t a, char32_t) {
    out += a;
    out += U" , ";
  });
  text = substitute_pairs(text, is_comma, not_n, [](std::u32string& out, char32_t, char32_t b) {
    out += U" , ";
    out += b;
  });
  if (text.size() >= 2 && text.back() == U',' && is_n(text[text.size() - 2])) {
    text.pop_back();
    text += U" , ";
  }
  // The language's apostrophes.
  const auto alpha = [](char32_t c) { return is_alpha(c); };
  const auto not_alpha = [](char32_t c) { return !is_alpha(c); };
  if (lang_ == "en") {
    text = substitute_apostrophes(text, not_alpha, not_alpha, U" ' ");
    text = substitute_apostrophes(
        text, [](char32_t c) { return !is_alpha(c) && !is_n(c); }, alpha, U" ' ");
    text = substitute_apostrophes(text, alpha, not_alpha, U" ' ");
    text = substitute_apostrophes(text, alpha, alpha, U" '");
    text = substitute_apostrophes(
        text, is_n, [](char32_t c) { return c == U's'; }, U" '");
  } else if (lang_ == "fr" || lang_ == "it") {
    text = substitute_apostrophes(text, not_alpha, not_alpha, U" ' ");
    text = substitute_apostrophes(text, not_alpha, alpha, U" ' ");
    text = substitute_apostrophes(text, alpha, not_alpha, U" ' ");
    text = substitute_apostrophes(text, alpha, alpha, U"' ");
  } else {
    text = replace_literal(text, U"'", U" ' ");
  }
  text = nonbreaking_prefixes(text);
  text = std::u32string(text::unicode::strip(collapse_spaces(text)));
  // TRAILING_DOT_APOSTROPHE: r"\.' ?$" -> " . ' " (the text is stripped: no space at its end).
  if (text.size() >= 2 && text[text.size() - 2] == U'.' && text.back() == U'\'') {
    text.resize(text.size() - 2);
    text += U" . ' ";
  }
  text = restore_multidots(std::move(text));
  if (escape) text = escape_xml(text);
  return join_tokens(text);
}

std::string MosesTokenizer::tokenize_utf8(std::string_view text, bool aggressive_dash_splits, bool escape) const {
  return utf8::encode(tokenize(utf8::decode(text), aggressive_dash_splits, escape));
}

std::u32string split_compounds(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size() + 32);
  std::size_t i = 0;
  while (i < s.size()) {
    if (i + 2 < s.size() && s[i + 1] == U'-' && !text::unicode::is_space(s[i]) && !text::unicode::is_space(s[i + 2])) {
      out += s[i];
      out += U" ##AT##-##AT## ";
      out += s[i + 2];
      i += 3;
    } else {
      out += s[i++];
    }
  }
  return out;
}

}  // namespace dragoman::eval
