// Atomic file replacement (see atomic_file.h).
#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"

namespace dragoman::io {
namespace {

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

[[noreturn]] void fail(const std::string& what, const std::string& path, int error) {
  throw Error("cannot write " + path + ": " + what + ": " + std::strerror(error));
}

// What stops `path` from being written as a new file, if something visible beforehand does: the
// path is a directory, or its directory is missing or not a directory. (Permissions and read-only
// file systems show when the temporary file is created.)
void check_destination(const std::string& path) {
  struct stat info {};
  if (path.empty()) throw Error("cannot write an output with an empty name");
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    throw Error("cannot write " + path + ": it is a directory (expected a file name)");
  }
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &info) != 0) {
    const int error = errno;
    throw Error("cannot write " + path + ": directory " + dir +
                (error == ENOENT ? " does not exist" : ": " + std::string(std::strerror(error))));
  }
  if (!S_ISDIR(info.st_mode)) throw Error("cannot write " + path + ": " + dir + " is not a directory");
}

// Whether `path` is written in place rather than replaced: it exists and is not a regular file (a
// device, a named pipe, a socket), or it is under /dev or /proc (/dev/stdout: a link to whatever
// standard output is, which a rename would replace by a file).
bool written_in_place(const std::string& path) {
  struct stat info {};
  if (path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0) return true;
  return ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode);
}

}  // namespace

void check_writable(const std::string& path) {
  if (!written_in_place(path)) {
    AtomicFileWriter probe(path);
    return;
  }
  // Not opened: opening a named pipe waits for its reader, and a probe that opened and closed it
  // would end that reader's input.
  check_destination(path);
  if (::access(path.c_str(), W_OK) != 0) fail("cannot open it", path, errno);
}

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  check_destination(path_);
  if (written_in_place(path_)) {
    direct_ = true;
    tmp_.clear();
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);  // (after `cmd >> FILE` too)
    if (fd_ < 0) fail("cannot open it", path_, errno);
    return;
  }
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create a file in " + directory_of(path_), path_, errno);
}

AtomicFileWriter::~AtomicFileWriter() { abort(); }

void AtomicFileWriter::abort() noexcept {
  if (fd_ < 0) return;
  ::close(fd_);
  if (!direct_) ::unlink(tmp_.c_str());
  fd_ = -1;
}

void AtomicFileWriter::append(std::string_view bytes) {
  if (fd_ < 0) throw Error("cannot write " + path_ + ": the file is already committed or abandoned");
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      abort();
      fail("write failed", path_, error);
    }
    written += static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw Error("cannot write " + path_ + ": the file is already committed or abandoned");
  if (direct_) {  // nothing to rename (and a device may not sync)
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("close failed", path_, errno);
    return;
  }
  if (::fsync(fd_) != 0) {
    const int error = errno;
    abort();
    fail("fsync failed", path_, error);
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(tmp_.c_str());
    fail("close failed", path_, error);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp_.c_str());
    fail("rename failed", path_, error);
  }
  // Make the rename itself durable.
  const int dir = ::open(directory_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFileWriter file(path);
  file.append(bytes);
  file.commit();
}

}  // namespace dragoman::io
