// Reading UTF-8 text files as lines (see text_lines.h).
#include "io/text_lines.h"

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "base/utf8.h"
#include "io/read_file.h"

namespace dragoman::io {
namespace {

void check_line(const std::string& name, std::size_t number, std::string_view line) {
  const std::size_t bad = utf8::find_invalid(line);
  if (bad != std::string_view::npos) {
    throw_input_error(name, number,
                      "invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line (expected UTF-8 text)");
  }
}

TextLines split_lines(std::string name, std::vector<char> data) {
  TextLines text;
  text.name = std::move(name);
  text.data = std::move(data);
  const std::string_view all(text.data.data(), text.data.size());
  std::size_t start = 0;
  while (start < all.size()) {
    std::size_t end = all.find('\n', start);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view line = all.substr(start, end - start);
    check_line(text.name, text.lines.size() + 1, line);
    text.lines.push_back(line);
    start = end + 1;
  }
  return text;
}

constexpr std::size_t kBlock = 1 << 20;

}  // namespace

TextLineStream::TextLineStream(const std::string& path) : name_(path == "-" ? "<stdin>" : path) {
  owned_ = path != "-";
  file_ = owned_ ? std::fopen(path.c_str(), "rb") : stdin;
  if (file_ == nullptr) throw Error("cannot open " + path + ": " + std::strerror(errno));
  buffer_.resize(kBlock);
}

TextLineStream::~TextLineStream() {
  if (owned_ && file_ != nullptr) std::fclose(file_);
}

bool TextLineStream::fill() {
  if (eof_) return false;
  // Keep the unread bytes (a line's start), at the front, and make room for a block after them.
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buffer_.size() - end_ < kBlock) buffer_.resize(end_ + kBlock);
  const std::size_t got = std::fread(buffer_.data() + end_, 1, buffer_.size() - end_, file_);
  if (got == 0) {
    if (std::ferror(file_)) throw Error("cannot read " + name_ + ": " + std::strerror(errno));
    eof_ = true;
    return false;
  }
  end_ += got;
  return true;
}

bool TextLineStream::next(std::string_view& line) {
  std::size_t scanned = begin_;
  while (true) {
    const void* nl = std::memchr(buffer_.data() + scanned, '\n', end_ - scanned);
    if (nl != nullptr) {
      const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(nl) - buffer_.data());
      line = std::string_view(buffer_.data() + begin_, at - begin_);
      begin_ = at + 1;
      break;
    }
    const std::size_t offset = end_ - begin_;  // what fill() keeps of this line
    if (!fill()) {
      if (begin_ == end_) return false;  // the end, after a final '\n' (or an empty file)
      line = std::string_view(buffer_.data() + begin_, end_ - begin_);  // a last line without '\n'
      begin_ = end_;
      break;
    }
    scanned = begin_ + offset;
  }
  check_line(name_, ++line_number_, line);
  return true;
}

TextLines text_lines_from_bytes(std::string name, std::string data) {
  return split_lines(std::move(name), std::vector<char>(data.begin(), data.end()));
}

TextLines read_text_lines(const std::string& path) {
  return split_lines(path == "-" ? "<stdin>" : path, read_file(path));
}

}  // namespace dragoman::io
