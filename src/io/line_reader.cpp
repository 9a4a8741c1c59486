// Line-at-a-time reading (see line_reader.h). The reader keeps its own buffer over a file
// descriptor instead of stdio's, so that it knows whether a whole line is already buffered: stdio
// hides that, and poll() on the descriptor alone would miss lines stdio has read ahead.
#include "io/line_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace dragoman::io {
namespace {

constexpr std::size_t kReadSize = 1 << 16;
constexpr int kStopCheckMs = 100;  // how often a wait for input looks at the stop flag

}  // namespace

LineReader::LineReader(const std::string& path) : name_(path == "-" ? "<stdin>" : path) {
  if (path == "-") {
    fd_ = STDIN_FILENO;
  } else {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
    owned_ = true;
  }
  struct stat info {};
  if (::fstat(fd_, &info) == 0) {
    if (S_ISDIR(info.st_mode)) {
      if (owned_) ::close(fd_);
      throw Error("cannot open " + path + ": it is a directory (expected a text file)");
    }
    regular_ = S_ISREG(info.st_mode);
  }
}

LineReader::~LineReader() {
  if (owned_) ::close(fd_);
}

bool LineReader::next(std::string& line) {
  for (;;) {
    const char* data = buffer_.data();
    const void* newline = std::memchr(data + scanned_, '\n', buffer_.size() - scanned_);
    std::size_t end = 0, next = 0;
    if (newline != nullptr) {
      end = static_cast<std::size_t>(static_cast<const char*>(newline) - data);
      next = end + 1;
    } else if (end_ && begin_ < buffer_.size()) {  // a last line without '\n'
      end = next = buffer_.size();
    } else if (end_ || !fill()) {
      return false;
    } else {
      continue;
    }
    std::size_t length = end - begin_;
    if (length > 0 && data[begin_ + length - 1] == '\r') --length;
    line.assign(data + begin_, length);
    begin_ = scanned_ = next;
    ++line_number_;
    return true;
  }
}

bool LineReader::ready() {
  if (end_ || regular_) return true;
  if (std::memchr(buffer_.data() + scanned_, '\n', buffer_.size() - scanned_) != nullptr) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;  // readable, or closed (POLLHUP): next() returns at once either way
}

bool LineReader::wait_readable() {
  if (regular_ || stop_flags_.empty()) return true;
  pollfd p{fd_, POLLIN, 0};
  for (;;) {
    for (const std::atomic<int>* flag : stop_flags_) {
      if (flag->load() != 0) {
        stopped_ = true;
        return false;
      }
    }
    const int n = ::poll(&p, 1, kStopCheckMs);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) throw Error("cannot read " + name_ + ": " + std::strerror(errno));
  }
}

bool LineReader::fill() {
  scanned_ = buffer_.size();
  if (begin_ > 0) {  // drop the lines already returned
    buffer_.erase(0, begin_);
    scanned_ -= begin_;
    begin_ = 0;
  }
  if (!wait_readable()) return false;
  const std::size_t old_size = buffer_.size();
  buffer_.resize(old_size + kReadSize);
  ssize_t n = 0;
  do {
    n = ::read(fd_, buffer_.data() + old_size, kReadSize);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    const int error = errno;
    buffer_.resize(old_size);
    throw Error("cannot read " + name_ + ": " + std::strerror(error));
  }
  buffer_.resize(old_size + static_cast<std::size_t>(n));
  if (n == 0) end_ = true;
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

}  // namespace dragoman::io
