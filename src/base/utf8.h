// UTF-8 decoding and encoding, strict in the way Python's "utf-8" codec is strict: overlong
// forms, surrogates (U+D800..U+DFFF), code points above U+10FFFF and truncated sequences are
// invalid. Text is handled as UTF-32 (std::u32string) inside the metrics so that "a character"
// means one code point, as it does for Python's str.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dragoman::utf8 {

// Returns the byte offset of the first invalid sequence in `bytes`, or npos if all is valid.
std::size_t find_invalid(std::string_view bytes);

// `bytes` with every ill-formed sequence replaced by U+FFFD, one per maximal subpart, as Python's
// bytes.decode("utf-8", errors="replace") does; `replaced` (if given) receives how many.
std::string replace_invalid(std::string_view bytes, std::size_t* replaced = nullptr);

// Appends the code points of `bytes` to `out`. `bytes` must be valid (see find_invalid);
// invalid input throws dragoman::Error.
void decode_append(std::string_view bytes, std::u32string& out);
std::u32string decode(std::string_view bytes);

// Appends the UTF-8 encoding of `text` to `out`.
void encode_append(std::u32string_view text, std::string& out);
std::string encode(std::u32string_view text);

}  // namespace dragoman::utf8
