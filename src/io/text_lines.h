// Reading text files as lines: the whole file is read into memory once and split on '\n' only
// (a '\r' before it stays part of the line, as with Python's open(newline="\n")). Every line
// is checked to be valid UTF-8; a bad line is an error naming the file and the line.
#pragma once

#include <cstddef>
#include <cstdio>
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

// The same lines, the same checks and errors, one at a time in bounded memory (a block and the
// longest line): for inputs larger than memory, such as a training corpus of tens of millions of
// lines.
class TextLineStream {
 public:
  explicit TextLineStream(const std::string& path);  // "-": standard input
  ~TextLineStream();
  TextLineStream(const TextLineStream&) = delete;
  TextLineStream& operator=(const TextLineStream&) = delete;

  // The next line (a view valid until the next call), checked; false at the end.
  bool next(std::string_view& line);
  std::size_t line_number() const { return line_number_; }  // of the last line returned, 1-based
  const std::string& name() const { return name_; }

 private:
  bool fill();  // reads a block; false at the end of the file

  std::string name_;
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;  // the unread bytes are buffer_[begin_, end_)
  bool eof_ = false;
  std::size_t line_number_ = 0;
};

}  // namespace dragoman::io
