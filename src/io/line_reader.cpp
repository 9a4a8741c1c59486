// Line-at-a-time reading (see line_reader.h).
#include "io/line_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace dragoman {

LineReader::LineReader(const std::string& path) : name_(path == "-" ? "<stdin>" : path) {
  if (path == "-") {
    file_ = stdin;
  } else {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) throw Error("cannot open " + path + ": " + std::strerror(errno));
    owned_ = true;
  }
}

LineReader::~LineReader() {
  std::free(buffer_);
  if (owned_) std::fclose(file_);
}

bool LineReader::next(std::string& line) {
  errno = 0;
  const ssize_t n = ::getline(&buffer_, &capacity_, file_);
  if (n < 0) {
    if (std::ferror(file_)) throw Error("cannot read " + name_ + ": " + std::strerror(errno));
    return false;
  }
  std::size_t length = static_cast<std::size_t>(n);
  if (length > 0 && buffer_[length - 1] == '\n') --length;
  if (length > 0 && buffer_[length - 1] == '\r') --length;
  line.assign(buffer_, length);
  ++line_number_;
  return true;
}

std::int64_t count_lines(const std::string& path) {
  struct stat info {};
  if (path == "-" || ::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return -1;
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return -1;
  std::vector<char> block(1 << 20);
  std::int64_t lines = 0;
  char last = '\n';
  std::size_t n = 0;
  while ((n = std::fread(block.data(), 1, block.size(), file)) > 0) {
    for (std::size_t i = 0; i < n; ++i) lines += block[i] == '\n';
    last = block[n - 1];
  }
  std::fclose(file);
  return lines + (last != '\n' ? 1 : 0);
}

}  // namespace dragoman
