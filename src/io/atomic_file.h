// Atomic file replacement: the bytes go to a temporary file in the same directory, which is
// flushed, fsynced and renamed over the target (then the directory is fsynced). A crash or a full
// disk never leaves a half-written file where a good one was: readers see the old file or the new.
#pragma once

#include <string>
#include <string_view>

namespace dragoman::io {

// Checks, before the expensive work that produces it, that `path` can be written: it is not a
// directory, its directory exists, and a file can be created there (the temporary file is created
// and removed again, as AtomicFileWriter would). Throws dragoman::Error naming the path and what
// is wrong.
void check_writable(const std::string& path);

// Writes `bytes` to `path` atomically. Throws dragoman::Error naming the path on any failure;
// the temporary file is removed and the old `path`, if any, is untouched.
void write_file_atomically(const std::string& path, std::string_view bytes);

// The same for output written piece by piece (e.g. translations as they are made): append() goes
// to PATH.tmp.PID; commit() fsyncs it and renames it to PATH. A writer destroyed without commit()
// (an error, an interruption) removes the temporary file and leaves PATH as it was. A PATH that
// exists and is not a regular file (/dev/null, a named pipe, a terminal), and any PATH under /dev or
// /proc (/dev/stdout), is written directly, as `cmd >> PATH` would: renaming a file over it would
// replace the device or the link. check_writable does not open such a path (a named pipe's open
// waits for its reader).
class AtomicFileWriter {
 public:
  // Creates the temporary file, so a path that cannot be written fails here (check_writable's
  // errors), before any output is produced.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void append(std::string_view bytes);
  void commit();
  const std::string& path() const { return path_; }
  const std::string& temporary_path() const { return tmp_; }  // "" when written directly

 private:
  void abort() noexcept;
  std::string path_, tmp_;
  int fd_ = -1;
  bool direct_ = false;  // PATH itself is written (not a regular file)
};

}  // namespace dragoman::io
