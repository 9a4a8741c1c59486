// A file mapped read-only into memory (mmap, MAP_SHARED): its pages come from the page cache, so
// every process that maps the same file on a machine shares one copy, and only what is touched is
// read. For large derived files such as the encoded training corpus.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace dragoman::io {

class MappedFile {
 public:
  // Throws dragoman::Error naming the file if it cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace dragoman::io
