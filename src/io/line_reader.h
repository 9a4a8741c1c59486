// Reading a text file or standard input one line at a time, for inputs that need not fit in memory
// (translate streams its input in chunks). Lines are split on '\n'; a '\r' before it is dropped, so
// CRLF files read as LF files; a last line without '\n' is a line; an empty file has no lines. The
// bytes are returned as they are: checking them (UTF-8) is the caller's business, which can then
// name the line.
//
// For interactive use (a pipe or a terminal fed a line at a time) the reader says whether the next
// line is available without waiting (ready()), so a caller can work on the lines it has instead of
// blocking for more; and a wait for input can be cut short by a stop flag (a signal).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace dragoman::io {

// Where lines come from, one at a time: a LineReader, or a test's stand-in (decode/input_chunks.h
// reads its chunks from one).
class LineSource {
 public:
  virtual ~LineSource() = default;
  // The next line, without its end; false at the end of the input (or when a wait was stopped).
  virtual bool next(std::string& line) = 0;
  // Whether next() returns without waiting.
  virtual bool ready() = 0;
  // Adds a flag that, once non-zero, stops a wait for input (nullptr: none).
  virtual void stop_waiting_when(const std::atomic<int>* flag) = 0;
  // Whether the last next() returned false because a wait was stopped, not at the input's end.
  virtual bool stopped() const { return false; }
  virtual std::int64_t line_number() const = 0;  // of the last line returned, 1-based
  virtual const std::string& name() const = 0;   // for messages: "FILE:LINE: ..."
};

class LineReader final : public LineSource {
 public:
  explicit LineReader(const std::string& path);  // "-": standard input; a directory is an error
  ~LineReader() override;
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line, without its end. false at the end of the input, or when the stop flag (below)
  // became non-zero while waiting for input (stopped() then says so). Throws dragoman::Error
  // naming the file if reading fails.
  bool next(std::string& line) override;
  // Whether next() returns without waiting: a whole line is buffered, the input has ended, or the
  // input has bytes ready to read. Always true for a regular file.
  bool ready() override;
  // While waiting for input, next() checks the flags a few times a second and gives up when one
  // is non-zero (without flags it waits until input comes). Each call adds a flag (nullptr: none):
  // a signal's, and a reader thread's owner that stops waiting for it.
  void stop_waiting_when(const std::atomic<int>* flag) override {
    if (flag != nullptr) stop_flags_.push_back(flag);
  }
  bool stopped() const override { return stopped_; }

  std::int64_t line_number() const override { return line_number_; }  // of the last line returned, 1-based
  const std::string& name() const override { return name_; }          // the path, or "<stdin>"

 private:
  bool fill();  // reads more bytes; false at the end of the input or when stopped
  bool wait_readable();

  std::string name_;
  int fd_ = -1;
  bool owned_ = false;
  bool regular_ = false;  // a regular file never blocks: no need to poll it
  std::string buffer_;
  std::size_t begin_ = 0;    // the unread bytes are buffer_[begin_, size)
  std::size_t scanned_ = 0;  // buffer_[begin_, scanned_) holds no '\n'
  bool end_ = false;
  bool stopped_ = false;
  std::vector<const std::atomic<int>*> stop_flags_;
  std::int64_t line_number_ = 0;
};

// The number of lines LineReader would return for a regular file, or -1 for standard input or
// anything that is not a regular file (a pipe must not be read twice).
std::int64_t count_lines(const std::string& path);

}  // namespace dragoman::io
