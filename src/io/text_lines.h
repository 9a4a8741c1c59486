// Reading text files as lines: the whole file is read into memory once and split on '\n' only
// (a '\r' before it stays part of the line, as with Python's open(newline="\n")). Every line
// is checked to be valid UTF-8; a bad line is an error naming the file and the line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dragoman::io {

struct TextLines {
  std::string name;  // path, or "<stdin>"
  // The file's bytes. A vector, not a std::string: moving a short std::string moves its bytes
  // (small-string optimisation) and would leave `lines` pointing at the old place.
  std::vector<char> data;
  std::vector<std::string_view> lines;  // views into data, without the '\n'
};

// Reads `path` ("-" reads standard input). Throws dragoman::Error if the file cannot be read or a
// line is not valid UTF-8 ("FILE:LINE: invalid UTF-8 at byte B of the line").
TextLines read_text_lines(const std::string& path);

// Splits and validates bytes already in memory; `name` is used in error messages.
TextLines text_lines_from_bytes(std::string name, std::string data);

}  // namespace dragoman::io
