// The encoded corpus's cache file: a header (magic, format version, the key of what it was made
// from, the filter counts, the sizes), the columns (source offsets, target offsets, line numbers:
// int64; source tokens, target tokens: int32; host byte order), and a checksum of everything before
// it (ContentHash over 1 MiB blocks). Written a chunk of pairs at a time in bounded memory (each
// column to its own temporary file, assembled into the cache at the end, atomically); read by
// mapping it, so the corpus is not copied into the process: its columns are views of the mapping,
// shared by every process on the machine.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/corpus.h"

namespace dragoman::data {

class CacheWriter {
 public:
  explicit CacheWriter(std::string path);  // the temporary files go beside path
  ~CacheWriter();                          // removes them (finish() or not)
  CacheWriter(const CacheWriter&) = delete;
  CacheWriter& operator=(const CacheWriter&) = delete;

  // One kept pair.
  void add(const std::vector<std::int32_t>& src, const std::vector<std::int32_t>& tgt, std::int64_t line_number);
  // Writes the cache file (atomically) with `key` and `counts` in its header.
  void finish(std::uint64_t key, const FilterCounts& counts);

 private:
  struct Part;
  std::string path_;
  std::vector<std::unique_ptr<Part>> parts_;  // src offsets, tgt offsets, line numbers, src tokens, tgt tokens
  std::int64_t pairs_ = 0, src_tokens_ = 0, tgt_tokens_ = 0;
};

// The corpus in `path`, mapped, if it was made with `key` and is intact (checksum, sizes,
// offsets); nullopt otherwise (another key, another format version, damage).
std::optional<EncodedCorpus> map_cache(const std::string& path, std::uint64_t key);

}  // namespace dragoman::data
