// ZIP archives as numpy (.npz) and PyTorch (torch.save) write them: members stored or deflated
// (zlib), ZIP64 included. Every offset and size is checked against the archive before it is used,
// and every member against its CRC-32: a damaged archive is a dragoman::Error naming it, never an
// out-of-bounds read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dragoman::io {

class ZipArchive {
 public:
  // `bytes` must outlive the archive; `name` and `kind` (".npz archive") are used in messages.
  ZipArchive(std::string name, std::string_view bytes, std::string kind = "ZIP archive");
  const std::vector<std::string>& names() const { return names_; }  // in the central directory's order
  std::string read(const std::string& member) const;                // its bytes, inflated and checked

  struct Member {
    std::string name;
    std::uint16_t method = 0;
    std::uint32_t crc = 0;
    std::uint64_t compressed = 0, size = 0, local_header = 0;
  };

 private:
  std::string name_;
  std::string_view bytes_;
  std::string kind_;
  std::vector<Member> members_;
  std::vector<std::string> names_;
};

}  // namespace dragoman::io
