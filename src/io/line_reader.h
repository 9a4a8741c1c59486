// Reading a text file or standard input one line at a time, for inputs that need not fit in memory
// (translate streams its input in chunks). Lines are split on '\n'; a '\r' before it is dropped, so
// CRLF files read as LF files; a last line without '\n' is a line; an empty file has no lines. The
// bytes are returned as they are: checking them (UTF-8) is the caller's business, which can then
// name the line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace dragoman {

class LineReader {
 public:
  explicit LineReader(const std::string& path);  // "-": standard input
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line, without its end. false at the end of the input. Throws dragoman::Error naming
  // the file if reading fails.
  bool next(std::string& line);
  std::int64_t line_number() const { return line_number_; }  // of the last line returned, 1-based
  const std::string& name() const { return name_; }          // the path, or "<stdin>"

 private:
  std::string name_;
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  char* buffer_ = nullptr;
  std::size_t capacity_ = 0;
  std::int64_t line_number_ = 0;
};

// The number of lines LineReader would return for a regular file, or -1 for standard input or
// anything that is not a regular file (a pipe must not be read twice).
std::int64_t count_lines(const std::string& path);

}  // namespace dragoman
