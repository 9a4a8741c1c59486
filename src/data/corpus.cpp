#include "data/corpus.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "base/error.h"
#include "base/hash.h"
#include "base/parallel.h"
#include "data/corpus_cache.h"
#include "io/atomic_file.h"
#include "io/text_lines.h"

namespace dragoman::data {
namespace {

constexpr std::size_t kChunk = 1 << 16;    // lines read and encoded at a time (bounds the memory)
constexpr std::uint64_t kHashVersion = 3;  // the inputs hashed line by line

// The pairs of the inputs, a chunk at a time, each line checked as it is read (UTF-8; the TSV's
// tab; the files' equal line counts at the end), and a hash of everything read.
class PairStream {
 public:
  explicit PairStream(const CorpusOptions& o) : o_(o) {
    if (!o.tsv.empty()) {
      if (!o.source.empty() || !o.target.empty())
        throw Error("corpus: give a TSV file or source and target files, not both");
      tsv_ = std::make_unique<io::TextLineStream>(o.tsv);
      hash_.add("tsv");
    } else {
      if (o.source.empty() || o.target.empty())
        throw Error("corpus: a source and a target file are needed (or a TSV file)");
      src_ = std::make_unique<io::TextLineStream>(o.source);
      tgt_ = std::make_unique<io::TextLineStream>(o.target);
      hash_.add("pair");
    }
  }

  // Up to `max` next pairs into src and tgt (cleared first); false when the inputs are done.
  bool next_chunk(std::size_t max, std::vector<std::string>& src, std::vector<std::string>& tgt) {
    src.clear();
    tgt.clear();
    std::string_view a, b;
    while (src.size() < max) {
      if (tsv_) {
        if (!tsv_->next(a)) break;
        const std::size_t tab = a.find('\t');
        if (tab == std::string_view::npos || a.find('\t', tab + 1) != std::string_view::npos) {
          throw_input_error(o_.tsv, tsv_->line_number(), "expected \"source<TAB>target\" (exactly one tab)");
        }
        hash_.add(a);
        src.emplace_back(a.substr(0, tab));
        tgt.emplace_back(a.substr(tab + 1));
      } else {
        const bool more_src = src_->next(a);
        if (more_src) src.emplace_back(a);  // (b's read reuses the stream's buffer, not a's)
        const bool more_tgt = tgt_->next(b);
        if (more_src != more_tgt) unequal_lengths();
        if (!more_src) break;
        hash_.add(src.back()).add(b);
        tgt.emplace_back(b);
      }
      ++lines_;
    }
    return !src.empty();
  }

  std::uint64_t hash() const { return ContentHash(hash_).add_word(lines_).value(); }

 private:
  // One file ended before the other: both counted (the longer one read to its end).
  [[noreturn]] void unequal_lengths() {
    std::string_view line;
    while (src_->next(line)) {
    }
    while (tgt_->next(line)) {
    }
    throw Error("corpus: " + o_.source + " has " + std::to_string(src_->line_number()) + " lines but " + o_.target +
                " has " + std::to_string(tgt_->line_number()) + "; the files must be aligned line by line");
  }

  const CorpusOptions& o_;
  std::unique_ptr<io::TextLineStream> src_, tgt_, tsv_;
  ContentHash hash_ = ContentHash().add_word(kHashVersion);
  std::uint64_t lines_ = 0;
};

std::uint64_t cache_key(std::uint64_t inputs_hash, const CorpusOptions& o, const text::Vocabulary& vocab) {
  ContentHash h;
  h.add(o.tsv.empty() ? "pair" : "tsv");
  h.add_word(inputs_hash);
  h.add(vocab.bytes());
  // An imported vocabulary (text/vocabulary.h): its piece tables and its target side count too.
  if (vocab.table() != nullptr) h.add(vocab.table()->to_json());
  if (&vocab.target() != &vocab) {
    h.add(vocab.target().bytes());
    if (vocab.target().table() != nullptr) h.add(vocab.target().table()->to_json());
  }
  std::uint64_t ratio_bits;
  std::memcpy(&ratio_bits, &o.max_ratio, sizeof ratio_bits);
  h.add_word(static_cast<std::uint64_t>(o.max_length)).add_word(ratio_bits);
  return h.value();
}

// Why a pair is dropped, or kKept.
enum class Verdict { kKept, kEmpty, kTooLong, kBadRatio };

Verdict judge(std::size_t ls, std::size_t lt, const CorpusOptions& o) {
  if (ls == 0 || lt == 0) return Verdict::kEmpty;
  if (static_cast<std::int64_t>(std::max(ls, lt)) > o.max_length) return Verdict::kTooLong;
  if (o.max_ratio > 0 && static_cast<double>(std::max(ls, lt)) > o.max_ratio * static_cast<double>(std::min(ls, lt))) {
    return Verdict::kBadRatio;
  }
  return Verdict::kKept;
}

// Reads, encodes and filters the inputs a chunk at a time; the kept pairs go to `cache` (when
// given) or into the returned corpus. Returns the inputs' hash in `hash`.
EncodedCorpus encode(const CorpusOptions& o, const text::Vocabulary& vocab, int threads, const std::atomic<int>* stop,
                     CacheWriter* cache, std::uint64_t& hash) {
  EncodedCorpus c;
  PairStream pairs(o);
  std::vector<std::string> src_lines, tgt_lines;
  std::vector<std::vector<std::int32_t>> src(kChunk), tgt(kChunk);
  std::int64_t line = 0;
  while (pairs.next_chunk(kChunk, src_lines, tgt_lines)) {
    const std::size_t n = src_lines.size();
    parallel_for(n, threads, [&](std::size_t from, std::size_t to) {
      for (std::size_t j = from; j < to; ++j) {
        if (stop != nullptr && stop->load() != 0) throw Interrupted("corpus: encoding interrupted");
        src[j] = vocab.encode(src_lines[j]);
        tgt[j] = vocab.encode_target(tgt_lines[j]);
      }
    });
    for (std::size_t j = 0; j < n; ++j) {
      ++line;
      switch (judge(src[j].size(), tgt[j].size(), o)) {
        case Verdict::kEmpty: ++c.counts.empty; continue;
        case Verdict::kTooLong: ++c.counts.too_long; continue;
        case Verdict::kBadRatio: ++c.counts.bad_ratio; continue;
        case Verdict::kKept: break;
      }
      ++c.counts.kept;
      if (cache != nullptr) {
        cache->add(src[j], tgt[j], line);
        continue;
      }
      c.src_tokens.append(src[j].begin(), src[j].end());
      c.tgt_tokens.append(tgt[j].begin(), tgt[j].end());
      c.src_offsets.push_back(static_cast<std::int64_t>(c.src_tokens.size()));
      c.tgt_offsets.push_back(static_cast<std::int64_t>(c.tgt_tokens.size()));
      c.line_numbers.push_back(line);
    }
  }
  c.counts.total = line;
  hash = pairs.hash();
  return c;
}

}  // namespace

std::vector<std::int32_t> EncodedCorpus::src(std::int64_t i) const {
  return {src_tokens.begin() + src_offsets[i], src_tokens.begin() + src_offsets[i + 1]};
}

std::vector<std::int32_t> EncodedCorpus::tgt(std::int64_t i) const {
  return {tgt_tokens.begin() + tgt_offsets[i], tgt_tokens.begin() + tgt_offsets[i + 1]};
}

void split_tsv_file(const std::string& tsv, const std::string& source, const std::string& target) {
  CorpusOptions o;
  o.tsv = tsv;
  PairStream pairs(o);
  io::AtomicFileWriter src(source), tgt(target);
  std::vector<std::string> a, b;
  std::string out_a, out_b;
  while (pairs.next_chunk(kChunk, a, b)) {
    out_a.clear();
    out_b.clear();
    for (std::size_t i = 0; i < a.size(); ++i) {
      out_a.append(a[i]).push_back('\n');
      out_b.append(b[i]).push_back('\n');
    }
    src.append(out_a);
    tgt.append(out_b);
  }
  src.commit();
  tgt.commit();
}

std::string input_stamp(const CorpusOptions& options) {
  std::string stamp;
  for (const std::string* path : {&options.source, &options.target, &options.tsv}) {
    if (path->empty()) continue;
    struct stat st {};
    if (::stat(path->c_str(), &st) != 0) throw Error("cannot read " + *path + ": " + std::strerror(errno));
    stamp += *path + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ino) + "\n";
  }
  return stamp;
}

std::uint64_t check_parallel_corpus(const CorpusOptions& options) {
  PairStream pairs(options);
  std::vector<std::string> a, b;
  while (pairs.next_chunk(kChunk, a, b)) {
  }
  return pairs.hash();
}

EncodedCorpus load_parallel_corpus(const CorpusOptions& options, const text::Vocabulary& vocab,
                                   const std::string& cache_path, int threads, const std::atomic<int>* stop,
                                   std::optional<std::uint64_t> checked_hash) {
  if (options.max_length < 1) throw Error("corpus: max_length must be >= 1");
  if (options.max_ratio < 0) throw Error("corpus: max_ratio must be >= 0 (0: no ratio filter)");
  std::uint64_t hash = 0;
  if (cache_path.empty()) {
    EncodedCorpus corpus = encode(options, vocab, threads, stop, nullptr, hash);
    corpus.inputs_hash = hash;
    return corpus;
  }
  // The cache is keyed by the inputs' hash: with the one the caller has from check_parallel_corpus
  // (or a streaming pass now), a cache that matches is mapped; else one encoding pass, whose own
  // hash keys the new cache.
  if (std::filesystem::exists(cache_path)) {
    const std::uint64_t inputs = checked_hash ? *checked_hash : check_parallel_corpus(options);
    if (std::optional<EncodedCorpus> cached = map_cache(cache_path, cache_key(inputs, options, vocab))) {
      spdlog::debug("corpus: using the cache {}", cache_path);
      cached->inputs_hash = inputs;
      return std::move(*cached);
    }
    spdlog::info("corpus: {} was made from other inputs (or is damaged); encoding again", cache_path);
  }
  const std::string what = options.tsv.empty() ? options.source + " and " + options.target : options.tsv;
  spdlog::info("corpus: encoding {} into {}", what, cache_path);
  std::uint64_t key = 0;
  {
    CacheWriter writer(cache_path);
    const EncodedCorpus counted = encode(options, vocab, threads, stop, &writer, hash);
    if (checked_hash && hash != *checked_hash) {
      spdlog::warn("corpus: {} changed since it was checked; the cache holds what was read now", what);
    }
    key = cache_key(hash, options, vocab);
    writer.finish(key, counted.counts);
  }
  std::optional<EncodedCorpus> mapped = map_cache(cache_path, key);
  if (!mapped) throw Error("corpus: cannot read back the cache " + cache_path + " just written");
  mapped->inputs_hash = hash;
  return std::move(*mapped);
}

}  // namespace dragoman::data
