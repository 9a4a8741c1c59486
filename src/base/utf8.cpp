// Strict UTF-8 decoding and encoding (see utf8.h).
#include "base/utf8.h"

#include "base/error.h"

namespace dragoman::utf8 {
namespace {

// Decodes one sequence starting at bytes[i]. On success stores the code point and its length
// and returns true; returns false for any sequence Python's strict "utf-8" codec rejects.
bool decode_one(std::string_view bytes, std::size_t i, char32_t& cp, std::size_t& len) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(bytes[i + k]); };
  const std::size_t left = bytes.size() - i;
  const unsigned char b0 = b(0);
  if (b0 < 0x80) {
    cp = b0;
    len = 1;
    return true;
  }
  if (b0 < 0xC2) return false;  // continuation byte or overlong 2-byte lead (C0, C1)
  const auto is_cont = [](unsigned char c) { return (c & 0xC0) == 0x80; };
  if (b0 < 0xE0) {
    if (left < 2 || !is_cont(b(1))) return false;
    cp = (char32_t(b0 & 0x1F) << 6) | (b(1) & 0x3F);
    len = 2;
    return true;
  }
  if (b0 < 0xF0) {
    if (left < 3 || !is_cont(b(1)) || !is_cont(b(2))) return false;
    if (b0 == 0xE0 && b(1) < 0xA0) return false;   // overlong
    if (b0 == 0xED && b(1) >= 0xA0) return false;  // surrogate
    cp = (char32_t(b0 & 0x0F) << 12) | (char32_t(b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    len = 3;
    return true;
  }
  if (b0 < 0xF5) {
    if (left < 4 || !is_cont(b(1)) || !is_cont(b(2)) || !is_cont(b(3))) return false;
    if (b0 == 0xF0 && b(1) < 0x90) return false;   // overlong
    if (b0 == 0xF4 && b(1) >= 0x90) return false;  // above U+10FFFF
    cp = (char32_t(b0 & 0x07) << 18) | (char32_t(b(1) & 0x3F) << 12) | (char32_t(b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    len = 4;
    return true;
  }
  return false;
}

// The length of the maximal subpart of an ill-formed sequence at bytes[i] (Unicode 3.9, what
// Python's errors="replace" replaces with one U+FFFD): the lead byte and the continuation bytes
// that could still have completed a valid sequence. At least 1.
std::size_t invalid_length(std::string_view bytes, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(bytes[i]);
  std::size_t expected = 0;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 < 0xE0) {
    expected = 2;
  } else if (b0 >= 0xE0 && b0 < 0xF0) {
    expected = 3;
    if (b0 == 0xE0) low = 0xA0;
    if (b0 == 0xED) high = 0x9F;
  } else if (b0 >= 0xF0 && b0 < 0xF5) {
    expected = 4;
    if (b0 == 0xF0) low = 0x90;
    if (b0 == 0xF4) high = 0x8F;
  } else {
    return 1;
  }
  std::size_t len = 1;
  while (len < expected && i + len < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i + len]);
    if (len == 1 ? (c < low || c > high) : (c & 0xC0) != 0x80) break;
    ++len;
  }
  return len;
}

}  // namespace

std::string replace_invalid(std::string_view bytes, std::size_t* replaced) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0, count = 0;
  char32_t cp = 0;
  std::size_t len = 0;
  while (i < bytes.size()) {
    if (decode_one(bytes, i, cp, len)) {
      out.append(bytes.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      i += invalid_length(bytes, i);
      ++count;
    }
  }
  if (replaced != nullptr) *replaced = count;
  return out;
}

std::size_t find_invalid(std::string_view bytes) {
  std::size_t i = 0;
  char32_t cp = 0;
  std::size_t len = 0;
  while (i < bytes.size()) {
    // ASCII fast path: most text is mostly ASCII.
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    if (!decode_one(bytes, i, cp, len)) return i;
    i += len;
  }
  return std::string_view::npos;
}

void decode_append(std::string_view bytes, std::u32string& out) {
  out.reserve(out.size() + bytes.size());
  std::size_t i = 0;
  char32_t cp = 0;
  std::size_t len = 0;
  while (i < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (!decode_one(bytes, i, cp, len)) {
      throw Error("invalid UTF-8 at byte " + std::to_string(i));
    }
    out.push_back(cp);
    i += len;
  }
}

std::u32string decode(std::string_view bytes) {
  std::u32string out;
  decode_append(bytes, out);
  return out;
}

void encode_append(std::u32string_view text, std::string& out) {
  for (char32_t c : text) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
}

std::string encode(std::u32string_view text) {
  std::string out;
  encode_append(text, out);
  return out;
}

}  // namespace dragoman::utf8
