// The encoded corpus's cache file (see corpus_cache.h).
#include "data/corpus_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/hash.h"
#include "io/atomic_file.h"
#include "io/mapped_file.h"

namespace dragoman::data {
namespace {

constexpr char kMagic[16] = {'D', 'R', 'A', 'G', 'O', 'M', 'A', 'N', '-', 'C', 'O', 'R', 'P', 'U', 'S', '\0'};
// 3: streamed (the inputs hashed line by line, the checksum over blocks), read by mapping
constexpr std::uint64_t kVersion = 3;
constexpr std::size_t kHeaderWords = 2 + 5 + 3;  // version, key; the counts; pairs, source and target tokens
constexpr std::size_t kHeaderBytes = sizeof kMagic + kHeaderWords * 8;
constexpr std::size_t kBlock = 1 << 20;  // the checksum's block, and the copy buffer
constexpr std::size_t kFlush = 4 << 20;  // bytes a part buffers before writing them

// The checksum of `bytes`: ContentHash over consecutive kBlock blocks.
std::uint64_t checksum(std::string_view bytes) {
  ContentHash h;
  for (std::size_t at = 0; at < bytes.size(); at += kBlock) h.add(bytes.substr(at, kBlock));
  return h.value();
}

template <typename T>
void put(std::string& out, const T* data, std::size_t n) {
  out.append(reinterpret_cast<const char*>(data), n * sizeof(T));
}

// The cache file as it is written: bytes in, checksummed over the same blocks checksum() takes.
class ChecksummedOutput {
 public:
  explicit ChecksummedOutput(io::AtomicFileWriter& out) : out_(out) { block_.reserve(kBlock); }
  void write(std::string_view bytes) {
    while (!bytes.empty()) {
      const std::size_t n = std::min(bytes.size(), kBlock - block_.size());
      block_.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
      if (block_.size() == kBlock) flush();
    }
  }
  void finish() {
    if (!block_.empty()) flush();
    const std::uint64_t value = hash_.value();
    out_.append(std::string_view(reinterpret_cast<const char*>(&value), sizeof value));
  }

 private:
  void flush() {
    hash_.add(block_);
    out_.append(block_);
    block_.clear();
  }
  io::AtomicFileWriter& out_;
  std::string block_;
  ContentHash hash_;
};

}  // namespace

// A column's temporary file: bytes buffered, written in large pieces, read back once at the end.
struct CacheWriter::Part {
  explicit Part(const std::string& path) : file(path) {}
  io::AtomicFileWriter file;  // never committed: removed with the writer
  std::string buffer;
  void flush() {
    file.append(buffer);
    buffer.clear();
  }
  template <typename T>
  void add(const T* data, std::size_t n) {
    put(buffer, data, n);
    if (buffer.size() >= kFlush) flush();
  }
};

CacheWriter::CacheWriter(std::string path) : path_(std::move(path)) {
  for (const char* name : {"src-offsets", "tgt-offsets", "lines", "src-tokens", "tgt-tokens"}) {
    parts_.push_back(std::make_unique<Part>(path_ + ".part-" + name));
  }
  const std::int64_t zero = 0;
  parts_[0]->add(&zero, 1);
  parts_[1]->add(&zero, 1);
}

CacheWriter::~CacheWriter() = default;

void CacheWriter::add(const std::vector<std::int32_t>& src, const std::vector<std::int32_t>& tgt,
                      std::int64_t line_number) {
  src_tokens_ += static_cast<std::int64_t>(src.size());
  tgt_tokens_ += static_cast<std::int64_t>(tgt.size());
  ++pairs_;
  parts_[0]->add(&src_tokens_, 1);
  parts_[1]->add(&tgt_tokens_, 1);
  parts_[2]->add(&line_number, 1);
  parts_[3]->add(src.data(), src.size());
  parts_[4]->add(tgt.data(), tgt.size());
}

void CacheWriter::finish(std::uint64_t key, const FilterCounts& counts) {
  io::AtomicFileWriter file(path_);
  ChecksummedOutput out(file);
  std::string header(kMagic, sizeof kMagic);
  for (const std::uint64_t word : {kVersion, key}) put(header, &word, 1);
  for (const std::int64_t v :
       {counts.total, counts.empty, counts.too_long, counts.bad_ratio, counts.kept, pairs_, src_tokens_, tgt_tokens_}) {
    put(header, &v, 1);
  }
  out.write(header);
  std::vector<char> block(kBlock);
  for (const std::unique_ptr<Part>& part : parts_) {
    part->flush();
    std::FILE* in = std::fopen(part->file.temporary_path().c_str(), "rb");
    if (in == nullptr) throw Error("cannot read " + part->file.temporary_path() + ": " + std::strerror(errno));
    std::size_t got = 0;
    while ((got = std::fread(block.data(), 1, block.size(), in)) > 0) out.write(std::string_view(block.data(), got));
    const bool failed = std::ferror(in) != 0;
    std::fclose(in);
    if (failed) throw Error("cannot read " + part->file.temporary_path());
  }
  out.finish();
  file.commit();
}

std::optional<EncodedCorpus> map_cache(const std::string& path, std::uint64_t key) {
  std::shared_ptr<const io::MappedFile> file;
  try {
    file = io::MappedFile::open(path);
  } catch (const Error&) {
    return std::nullopt;
  }
  const std::string_view bytes = file->bytes();
  if (bytes.size() < kHeaderBytes + 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) return std::nullopt;
  std::uint64_t words[kHeaderWords];
  std::memcpy(words, bytes.data() + sizeof kMagic, sizeof words);
  if (words[0] != kVersion || words[1] != key) return std::nullopt;
  std::uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (checksum(bytes.substr(0, bytes.size() - 8)) != stored) return std::nullopt;
  EncodedCorpus c;
  FilterCounts& k = c.counts;
  std::int64_t values[8];
  std::memcpy(values, words + 2, sizeof values);
  k = {values[0], values[1], values[2], values[3], values[4]};
  const std::int64_t n = values[5], n_src = values[6], n_tgt = values[7];
  // total = empty + too_long + bad_ratio + kept, checked by subtraction (a sum could overflow).
  std::int64_t rest = k.total;
  for (const std::int64_t part : {k.empty, k.too_long, k.bad_ratio, k.kept}) {
    if (part < 0 || part > rest) return std::nullopt;
    rest -= part;
  }
  if (rest != 0 || n != k.kept || n_src < 0 || n_tgt < 0) return std::nullopt;
  const std::size_t remaining = bytes.size() - kHeaderBytes - 8;
  // Counts beyond what the bytes could hold would overflow the size below.
  if (static_cast<std::uint64_t>(n) > remaining / 24 || static_cast<std::uint64_t>(n_src) > remaining / 4 ||
      static_cast<std::uint64_t>(n_tgt) > remaining / 4) {
    return std::nullopt;
  }
  const auto pairs = static_cast<std::size_t>(n);
  if (remaining != (3 * pairs + 2) * 8 + static_cast<std::size_t>(n_src + n_tgt) * 4) return std::nullopt;
  const char* at = bytes.data() + kHeaderBytes;  // 8-byte aligned: the header is 96 bytes
  const auto column = [&](auto* type, std::size_t count) {
    using T = std::remove_pointer_t<decltype(type)>;
    Column<T> col(file, reinterpret_cast<const T*>(at), count);
    at += count * sizeof(T);
    return col;
  };
  c.src_offsets = column(static_cast<std::int64_t*>(nullptr), pairs + 1);
  c.tgt_offsets = column(static_cast<std::int64_t*>(nullptr), pairs + 1);
  c.line_numbers = column(static_cast<std::int64_t*>(nullptr), pairs);
  c.src_tokens = column(static_cast<std::int32_t*>(nullptr), static_cast<std::size_t>(n_src));
  c.tgt_tokens = column(static_cast<std::int32_t*>(nullptr), static_cast<std::size_t>(n_tgt));
  const auto valid = [](const Column<std::int64_t>& offsets, std::int64_t total) {
    return offsets.front() == 0 && offsets.back() == total && std::is_sorted(offsets.begin(), offsets.end());
  };
  if (!valid(c.src_offsets, n_src) || !valid(c.tgt_offsets, n_tgt)) return std::nullopt;
  return c;
}

}  // namespace dragoman::data
