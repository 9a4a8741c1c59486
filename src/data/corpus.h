// Parallel corpora for training and validation: two aligned text files (or one TSV file) are read,
// checked (UTF-8, equal line counts, one tab per TSV line), encoded once with the vocabulary,
// filtered, and cached in a binary file keyed by a hash of the inputs, the vocabulary and the
// filter settings, so a restarted run does not encode again and a changed input is never served
// from a stale cache. The inputs are streamed a chunk of lines at a time and the encoded pairs go
// straight to the cache, which is then mapped, not read (data/corpus_cache.h): memory stays bounded
// whatever the corpus's size, and the processes of a machine share one copy.
#pragma once

#include <atomic>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "data/column.h"
#include "text/vocabulary.h"

namespace dragoman::data {

struct CorpusOptions {
  std::string source;  // one sentence per line
  std::string target;  // aligned line by line with source
  std::string tsv;     // or: "source<TAB>target" per line (then source/target are empty)
  // Pairs with more than max_length tokens on either side are dropped (the target's EOS not
  // counted), and pairs whose longer side has more than max_ratio times the tokens of the shorter
  // (max_ratio 0: no ratio filter).
  std::int64_t max_length = 250;
  double max_ratio = 3.0;
};

// What filtering did: total = empty + too_long + bad_ratio + kept.
struct FilterCounts {
  std::int64_t total = 0;
  std::int64_t empty = 0;      // a side with no tokens
  std::int64_t too_long = 0;
  std::int64_t bad_ratio = 0;
  std::int64_t kept = 0;
};

// The kept pairs' token ids (no BOS/EOS), concatenated, with offsets: in memory, or views of the
// mapped cache.
struct EncodedCorpus {
  Column<std::int32_t> src_tokens, tgt_tokens;
  Column<std::int64_t> src_offsets{0}, tgt_offsets{0};  // size() + 1 entries
  Column<std::int64_t> line_numbers;                    // 1-based line of each kept pair
  FilterCounts counts;
  std::uint64_t inputs_hash = 0;  // check_parallel_corpus's hash of the inputs it was made from

  std::int64_t size() const { return static_cast<std::int64_t>(line_numbers.size()); }
  std::int64_t src_length(std::int64_t i) const { return src_offsets[i + 1] - src_offsets[i]; }
  std::int64_t tgt_length(std::int64_t i) const { return tgt_offsets[i + 1] - tgt_offsets[i]; }
  std::vector<std::int32_t> src(std::int64_t i) const;
  std::vector<std::int32_t> tgt(std::int64_t i) const;
};

// Reads, checks, encodes and filters the corpus. cache_path: the binary cache to use and refresh
// (empty: none, the corpus is kept in memory; else the result is the mapped cache); a cache made
// from other inputs, another vocabulary or other filter settings, or an unreadable one, is rebuilt.
// Errors name the file and line: invalid UTF-8, a TSV line without exactly one tab, and files with
// different line counts. `stop` (may be nullptr) is checked before each sentence is encoded: when
// it is set, dragoman::Interrupted is thrown within a sentence's time.
// checked_hash: what check_parallel_corpus returned for these inputs in this process; with it, a
// valid cache is used without reading the inputs again.
EncodedCorpus load_parallel_corpus(const CorpusOptions& options, const text::Vocabulary& vocab,
                                   const std::string& cache_path, int threads, const std::atomic<int>* stop = nullptr,
                                   std::optional<std::uint64_t> checked_hash = std::nullopt);

// The checks of load_parallel_corpus without the encoding (so a run can refuse bad data before it
// writes anything); returns a hash of the input files' bytes, which changes whenever they do.
std::uint64_t check_parallel_corpus(const CorpusOptions& options);

// The inputs' identity without reading them: each file's path, size, modification time (in
// nanoseconds) and inode, as one string. A run keeps it beside check_parallel_corpus's hash, so a
// restart on unchanged files need not read tens of gigabytes again to hash them.
std::string input_stamp(const CorpusOptions& options);

// Writes a TSV file's two columns to `source` and `target` (for training a vocabulary on them), with
// the same checks as load_parallel_corpus.
void split_tsv_file(const std::string& tsv, const std::string& source, const std::string& target);

}  // namespace dragoman::data
