// ZIP archives (see zip.h).
#include "io/zip.h"

#include <zlib.h>

#include <algorithm>

#include "base/error.h"

namespace dragoman::io {
namespace {

using Member = ZipArchive::Member;

constexpr std::uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEndOfDirectory = 0x06054b50,
                        kZip64Locator = 0x07064b50, kZip64End = 0x06064b50;

// Little-endian reads within `bytes`, each checked against its end.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& name, const std::string& kind)
      : bytes_(bytes), name_(name), kind_(kind) {}
  std::uint64_t get(std::uint64_t at, int size) const {
    if (at > bytes_.size() || static_cast<std::uint64_t>(size) > bytes_.size() - at) fail("a field past the end");
    std::uint64_t v = 0;
    for (int i = size - 1; i >= 0; --i)
      v = (v << 8) | static_cast<unsigned char>(bytes_[at + static_cast<unsigned>(i)]);
    return v;
  }
  std::string_view slice(std::uint64_t at, std::uint64_t size) const {
    if (at > bytes_.size() || size > bytes_.size() - at) fail("data past the end of the file");
    return bytes_.substr(at, size);
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(name_ + ": not a usable " + kind_ + ": " + what);
  }

 private:
  std::string_view bytes_;
  const std::string& name_;
  const std::string& kind_;
};

std::vector<Member> central_directory(const Reader& r, std::uint64_t file_size) {
  // The end-of-directory record: in the last 22 + 65535 bytes (a comment may follow it).
  if (file_size < 22) r.fail("shorter than an empty ZIP file");
  std::uint64_t end = file_size - 22;
  const std::uint64_t lowest = file_size > 22 + 65535 ? file_size - 22 - 65535 : 0;
  while (r.get(end, 4) != kEndOfDirectory) {
    if (end == lowest) r.fail("no end-of-directory record (not a ZIP file)");
    --end;
  }
  std::uint64_t count = r.get(end + 10, 2), offset = r.get(end + 16, 4);
  if (count == 0xFFFF || offset == 0xFFFFFFFF) {  // ZIP64
    if (end < 20 || r.get(end - 20, 4) != kZip64Locator) r.fail("no ZIP64 locator");
    const std::uint64_t record = r.get(end - 20 + 8, 8);
    if (r.get(record, 4) != kZip64End) r.fail("no ZIP64 end-of-directory record");
    count = r.get(record + 32, 8);
    offset = r.get(record + 48, 8);
  }
  std::vector<Member> members;
  std::uint64_t at = offset;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (r.get(at, 4) != kCentralHeader) r.fail("a damaged central directory");
    Member m;
    m.method = static_cast<std::uint16_t>(r.get(at + 10, 2));
    m.crc = static_cast<std::uint32_t>(r.get(at + 16, 4));
    m.compressed = r.get(at + 20, 4);
    m.size = r.get(at + 24, 4);
    const std::uint64_t name_size = r.get(at + 28, 2), extra_size = r.get(at + 30, 2), comment_size = r.get(at + 32, 2);
    m.local_header = r.get(at + 42, 4);
    m.name = std::string(r.slice(at + 46, name_size));
    // ZIP64 sizes and offset, in this order, for the fields that hold 0xFFFFFFFF.
    std::uint64_t extra = at + 46 + name_size;
    const std::uint64_t extra_end = extra + extra_size;
    while (extra + 4 <= extra_end) {
      const std::uint64_t id = r.get(extra, 2), size = r.get(extra + 2, 2);
      if (id == 1) {
        std::uint64_t field = extra + 4;
        for (std::uint64_t* v : {&m.size, &m.compressed, &m.local_header}) {
          if (*v == 0xFFFFFFFF) {
            if (field + 8 > extra + 4 + size) r.fail("a short ZIP64 field of '" + m.name + "'");
            *v = r.get(field, 8);
            field += 8;
          }
        }
      }
      extra += 4 + size;
    }
    members.push_back(std::move(m));
    at = extra_end + comment_size;
  }
  return members;
}

std::string member_bytes(const Reader& r, const Member& m) {
  if (r.get(m.local_header, 4) != kLocalHeader) r.fail("'" + m.name + "' has no local header");
  const std::uint64_t data = m.local_header + 30 + r.get(m.local_header + 26, 2) + r.get(m.local_header + 28, 2);
  const std::string_view packed = r.slice(data, m.compressed);
  std::string out;
  if (m.method == 0) {
    if (m.size != m.compressed) r.fail("'" + m.name + "' is stored with two sizes");
    out.assign(packed);
  } else if (m.method == 8) {
    // Deflate expands at most about 1032 times: a larger claim is a damaged header.
    if (m.size > m.compressed * 1032 + 1024) r.fail("'" + m.name + "' claims an impossible size");
    out.resize(m.size);
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) r.fail("zlib could not start");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    std::uint64_t in_left = packed.size(), out_left = out.size();
    int status = Z_OK;
    while (status == Z_OK) {
      const auto chunk = [](std::uint64_t n) { return static_cast<uInt>(std::min<std::uint64_t>(n, 1u << 30)); };
      z.avail_in = chunk(in_left);
      z.avail_out = chunk(out_left);
      const uInt had_in = z.avail_in, had_out = z.avail_out;
      status = inflate(&z, Z_NO_FLUSH);
      in_left -= had_in - z.avail_in;
      out_left -= had_out - z.avail_out;
      if (status == Z_OK && had_in == z.avail_in && had_out == z.avail_out) status = Z_BUF_ERROR;
    }
    inflateEnd(&z);
    if (status != Z_STREAM_END || out_left != 0) r.fail("'" + m.name + "' does not inflate to its size");
  } else {
    r.fail("'" + m.name + "' uses ZIP method " + std::to_string(m.method) + " (only stored and deflated are read)");
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t done = 0; done < out.size();) {
    const auto n = static_cast<uInt>(std::min<std::size_t>(out.size() - done, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(out.data() + done), n);
    done += n;
  }
  if (crc != m.crc) r.fail("'" + m.name + "' fails its CRC-32 check (a damaged file)");
  return out;
}

}  // namespace

ZipArchive::ZipArchive(std::string name, std::string_view bytes, std::string kind)
    : name_(std::move(name)), bytes_(bytes), kind_(std::move(kind)) {
  const Reader r(bytes_, name_, kind_);
  members_ = central_directory(r, bytes_.size());
  for (const Member& m : members_) names_.push_back(m.name);
}

std::string ZipArchive::read(const std::string& member) const {
  const Reader r(bytes_, name_, kind_);
  for (const Member& m : members_) {
    if (m.name == member) return member_bytes(r, m);
  }
  throw Error(name_ + ": no member '" + member + "'");
}

}  // namespace dragoman::io
