#include "data/corpus.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>

#include "base/error.h"
#include "base/hash.h"
#include "base/parallel.h"
#include "io/atomic_file.h"
#include "io/text_lines.h"

namespace dragoman::data {
namespace {

constexpr char kCacheMagic[16] = {'D', 'R', 'A', 'G', 'O', 'M', 'A', 'N', '-', 'C', 'O', 'R', 'P', 'U', 'S', '\0'};
constexpr std::uint64_t kCacheVersion = 2;  // 2: the key hashes the inputs' content hash
constexpr std::size_t kChunk = 1 << 16;     // lines encoded per parallel chunk (bounds the scratch memory)

// The two sides' lines, aligned.
struct RawCorpus {
  std::vector<io::TextLines> files;  // kept alive: the views below point into them
  std::vector<std::string_view> src, tgt;
};

RawCorpus read_raw(const CorpusOptions& o) {
  RawCorpus raw;
  if (!o.tsv.empty()) {
    if (!o.source.empty() || !o.target.empty())
      throw Error("corpus: give a TSV file or source and target files, not both");
    raw.files.push_back(io::read_text_lines(o.tsv));
    const io::TextLines& t = raw.files.back();
    raw.src.reserve(t.lines.size());
    raw.tgt.reserve(t.lines.size());
    for (std::size_t i = 0; i < t.lines.size(); ++i) {
      const std::string_view line = t.lines[i];
      const std::size_t tab = line.find('\t');
      if (tab == std::string_view::npos || line.find('\t', tab + 1) != std::string_view::npos) {
        throw_input_error(o.tsv, i + 1, "expected \"source<TAB>target\" (exactly one tab)");
      }
      raw.src.push_back(line.substr(0, tab));
      raw.tgt.push_back(line.substr(tab + 1));
    }
    return raw;
  }
  if (o.source.empty() || o.target.empty())
    throw Error("corpus: a source and a target file are needed (or a TSV file)");
  raw.files.push_back(io::read_text_lines(o.source));
  raw.files.push_back(io::read_text_lines(o.target));
  const io::TextLines& s = raw.files[0];
  const io::TextLines& t = raw.files[1];
  if (s.lines.size() != t.lines.size()) {
    throw Error("corpus: " + o.source + " has " + std::to_string(s.lines.size()) + " lines but " + o.target + " has " +
                std::to_string(t.lines.size()) + "; the files must be aligned line by line");
  }
  raw.src = s.lines;
  raw.tgt = t.lines;
  return raw;
}

// A hash of the input files' bytes (what check_parallel_corpus returns).
std::uint64_t content_hash(const RawCorpus& raw) {
  ContentHash h;
  for (const io::TextLines& f : raw.files) h.add(std::string_view(f.data.data(), f.data.size()));
  return h.value();
}

std::uint64_t cache_key(std::uint64_t inputs_hash, const CorpusOptions& o, const text::Vocabulary& vocab) {
  ContentHash h;
  h.add_word(kCacheVersion).add(o.tsv.empty() ? "pair" : "tsv");
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

// --- the binary cache: magic, version, key, counts, sizes, the arrays (host byte order), then a
// checksum of everything before it ---

template <typename T>
void put(std::string& out, const T* data, std::size_t n) {
  out.append(reinterpret_cast<const char*>(data), n * sizeof(T));
}
template <typename T>
void put(std::string& out, T value) {
  put(out, &value, 1);
}

std::string serialize(const EncodedCorpus& c, std::uint64_t key) {
  std::string out(kCacheMagic, sizeof kCacheMagic);
  put(out, kCacheVersion);
  put(out, key);
  for (std::int64_t v : {c.counts.total, c.counts.empty, c.counts.too_long, c.counts.bad_ratio, c.counts.kept})
    put(out, v);
  put(out, c.size());
  put(out, static_cast<std::int64_t>(c.src_tokens.size()));
  put(out, static_cast<std::int64_t>(c.tgt_tokens.size()));
  put(out, c.src_offsets.data(), c.src_offsets.size());
  put(out, c.tgt_offsets.data(), c.tgt_offsets.size());
  put(out, c.line_numbers.data(), c.line_numbers.size());
  put(out, c.src_tokens.data(), c.src_tokens.size());
  put(out, c.tgt_tokens.data(), c.tgt_tokens.size());
  put(out, ContentHash().add(out).value());  // a checksum of all the above
  return out;
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  bool get(T* data, std::size_t n) {
    if (n > (bytes_.size() - pos_) / sizeof(T)) return false;
    std::memcpy(static_cast<void*>(data), bytes_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return true;
  }
  template <typename T>
  bool get(T& value) {
    return get(&value, 1);
  }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  const std::string& bytes_;
  std::size_t pos_ = 0;
};

bool offsets_valid(const std::vector<std::int64_t>& offsets, std::int64_t total) {
  if (offsets.front() != 0 || offsets.back() != total) return false;
  return std::is_sorted(offsets.begin(), offsets.end());
}

// The cached corpus if `path` holds one made with `key` and is intact; false otherwise.
bool read_cache(const std::string& path, std::uint64_t key, EncodedCorpus& c) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t checksum = 0;
  if (bytes.size() < sizeof checksum) return false;
  std::memcpy(&checksum, bytes.data() + bytes.size() - sizeof checksum, sizeof checksum);
  bytes.resize(bytes.size() - sizeof checksum);
  if (ContentHash().add(bytes).value() != checksum) return false;
  Reader r(bytes);
  char magic[sizeof kCacheMagic];
  std::uint64_t version = 0, stored_key = 0;
  if (!r.get(magic, sizeof magic) || std::memcmp(magic, kCacheMagic, sizeof magic) != 0) return false;
  if (!r.get(version) || version != kCacheVersion || !r.get(stored_key) || stored_key != key) return false;
  std::int64_t n = 0, n_src = 0, n_tgt = 0;
  FilterCounts& k = c.counts;
  if (!r.get(k.total) || !r.get(k.empty) || !r.get(k.too_long) || !r.get(k.bad_ratio) || !r.get(k.kept)) return false;
  if (!r.get(n) || !r.get(n_src) || !r.get(n_tgt)) return false;
  // total = empty + too_long + bad_ratio + kept, checked by subtraction (a sum could overflow).
  std::int64_t rest = k.total;
  for (const std::int64_t part : {k.empty, k.too_long, k.bad_ratio, k.kept}) {
    if (part < 0 || part > rest) return false;
    rest -= part;
  }
  if (rest != 0 || n != k.kept || n_src < 0 || n_tgt < 0) return false;
  const std::size_t remaining = bytes.size() - (sizeof kCacheMagic + 2 * 8 + 8 * 8);
  // Counts beyond what the bytes could hold would overflow the size below.
  if (static_cast<std::uint64_t>(n) > remaining / 24 || static_cast<std::uint64_t>(n_src) > remaining / 4 ||
      static_cast<std::uint64_t>(n_tgt) > remaining / 4) {
    return false;
  }
  const std::size_t expected = static_cast<std::size_t>(3 * n + 2) * 8 + static_cast<std::size_t>(n_src + n_tgt) * 4;
  if (remaining != expected) return false;
  c.src_offsets.resize(static_cast<std::size_t>(n) + 1);
  c.tgt_offsets.resize(static_cast<std::size_t>(n) + 1);
  c.line_numbers.resize(static_cast<std::size_t>(n));
  c.src_tokens.resize(static_cast<std::size_t>(n_src));
  c.tgt_tokens.resize(static_cast<std::size_t>(n_tgt));
  if (!r.get(c.src_offsets.data(), c.src_offsets.size()) || !r.get(c.tgt_offsets.data(), c.tgt_offsets.size()) ||
      !r.get(c.line_numbers.data(), c.line_numbers.size()) || !r.get(c.src_tokens.data(), c.src_tokens.size()) ||
      !r.get(c.tgt_tokens.data(), c.tgt_tokens.size()) || !r.at_end()) {
    return false;
  }
  return offsets_valid(c.src_offsets, n_src) && offsets_valid(c.tgt_offsets, n_tgt);
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

EncodedCorpus encode(const RawCorpus& raw, const CorpusOptions& o, const text::Vocabulary& vocab, int threads,
                     const std::atomic<int>* stop) {
  EncodedCorpus c;
  const std::size_t n = raw.src.size();
  c.counts.total = static_cast<std::int64_t>(n);
  std::vector<std::vector<std::int32_t>> src(std::min(n, kChunk)), tgt(std::min(n, kChunk));
  for (std::size_t begin = 0; begin < n; begin += kChunk) {
    const std::size_t end = std::min(n, begin + kChunk);
    parallel_for(end - begin, threads, [&](std::size_t from, std::size_t to) {
      for (std::size_t j = from; j < to; ++j) {
        if (stop != nullptr && stop->load() != 0) throw Interrupted("corpus: encoding interrupted");
        src[j] = vocab.encode(raw.src[begin + j]);
        tgt[j] = vocab.encode_target(raw.tgt[begin + j]);
      }
    });
    for (std::size_t j = 0; j < end - begin; ++j) {
      switch (judge(src[j].size(), tgt[j].size(), o)) {
        case Verdict::kEmpty: ++c.counts.empty; continue;
        case Verdict::kTooLong: ++c.counts.too_long; continue;
        case Verdict::kBadRatio: ++c.counts.bad_ratio; continue;
        case Verdict::kKept: break;
      }
      c.src_tokens.insert(c.src_tokens.end(), src[j].begin(), src[j].end());
      c.tgt_tokens.insert(c.tgt_tokens.end(), tgt[j].begin(), tgt[j].end());
      c.src_offsets.push_back(static_cast<std::int64_t>(c.src_tokens.size()));
      c.tgt_offsets.push_back(static_cast<std::int64_t>(c.tgt_tokens.size()));
      c.line_numbers.push_back(static_cast<std::int64_t>(begin + j + 1));
    }
  }
  c.counts.kept = c.size();
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
  const RawCorpus raw = read_raw(o);
  std::string src, tgt;
  for (std::size_t i = 0; i < raw.src.size(); ++i) {
    src.append(raw.src[i]).push_back('\n');
    tgt.append(raw.tgt[i]).push_back('\n');
  }
  io::write_file_atomically(source, src);
  io::write_file_atomically(target, tgt);
}

std::uint64_t check_parallel_corpus(const CorpusOptions& options) { return content_hash(read_raw(options)); }

EncodedCorpus load_parallel_corpus(const CorpusOptions& options, const text::Vocabulary& vocab,
                                   const std::string& cache_path, int threads, const std::atomic<int>* stop,
                                   std::optional<std::uint64_t> checked_hash) {
  if (options.max_length < 1) throw Error("corpus: max_length must be >= 1");
  if (options.max_ratio < 0) throw Error("corpus: max_ratio must be >= 0 (0: no ratio filter)");
  const bool have_cache = !cache_path.empty() && std::filesystem::exists(cache_path);
  EncodedCorpus corpus;
  // With the inputs' hash from check_parallel_corpus, a valid cache needs no second read of them.
  if (have_cache && checked_hash && read_cache(cache_path, cache_key(*checked_hash, options, vocab), corpus)) {
    spdlog::debug("corpus: using the cache {}", cache_path);
    return corpus;
  }
  corpus = EncodedCorpus();
  const RawCorpus raw = read_raw(options);
  const std::uint64_t key = cache_key(content_hash(raw), options, vocab);
  if (have_cache) {
    if (read_cache(cache_path, key, corpus)) {
      spdlog::debug("corpus: using the cache {}", cache_path);
      return corpus;
    }
    spdlog::info("corpus: {} was made from other inputs (or is damaged); encoding again", cache_path);
    corpus = EncodedCorpus();
  }
  spdlog::info("corpus: encoding {} pairs{}", raw.src.size(), cache_path.empty() ? "" : " into " + cache_path);
  corpus = encode(raw, options, vocab, threads, stop);
  if (!cache_path.empty()) io::write_file_atomically(cache_path, serialize(corpus, key));
  return corpus;
}

}  // namespace dragoman::data
