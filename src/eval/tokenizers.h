// sacreBLEU's BLEU tokenizers, re-implemented character for character: 13a (mteval-v13a, the
// default), intl (mteval-v14 international), zh (Chinese characters split, then 13a's regexes),
// char (every character a token) and none. Text is UTF-32 so that one element is one Python
// character. The output is what sacreBLEU's tokenizer returns: tokens joined by single spaces
// (char: characters joined by spaces, whitespace included, as sacreBLEU does).
#pragma once

#include <string>
#include <string_view>

namespace dragoman::eval {

enum class Tokenizer { k13a, kIntl, kZh, kChar, kNone };

// "13a", "intl", "zh", "char", "none"; anything else throws dragoman::Error listing the choices.
Tokenizer parse_tokenizer(std::string_view name);
const char* tokenizer_name(Tokenizer tokenizer);

std::u32string tokenize(Tokenizer tokenizer, std::u32string_view line);

// UTF-8 convenience wrapper (tests, tools).
std::string tokenize_utf8(Tokenizer tokenizer, std::string_view line);

}  // namespace dragoman::eval
