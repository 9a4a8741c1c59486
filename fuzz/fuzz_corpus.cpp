// The corpus readers: UTF-8 checks, line splitting, TSV, equal line counts, encoding and the
// length filters, as `dragoman train` reads its data. Input: the source file, a NUL, the target
// file. Each input runs three ways: the lines and UTF-8 functions on the bytes, the two files as a
// parallel corpus (check_parallel_corpus, then load_parallel_corpus with the seeds' vocabulary),
// and the source part alone as a TSV file. What is checked besides the error contract: UTF-8
// that validates decodes and encodes back to the same bytes, and replace_invalid's output
// validates; an encoded corpus is consistent (offsets, counts, ids within the vocabulary).
// Seeds: fuzz/seeds/fuzz_corpus (lines of tests/fixtures: demo corpus, BLEU, alignment TSV).
#include "base/error.h"
#include "base/utf8.h"
#include "data/corpus.h"
#include "fuzz_common.h"
#include "io/text_lines.h"
#include "text/vocabulary.h"

using namespace dragoman;

namespace {

const text::Vocabulary& vocabulary() {
  static const text::Vocabulary v = text::Vocabulary::load(DRAGOMAN_FUZZ_SEEDS "/fuzz_vocab/bpe-100.model");
  return v;
}

void check_encoded(const data::EncodedCorpus& c, const text::Vocabulary& vocab) {
  const data::FilterCounts& k = c.counts;
  if (k.total != k.empty + k.too_long + k.bad_ratio + k.kept || k.kept != c.size()) fuzz::fail("filter counts");
  if (c.src_offsets.size() != static_cast<std::size_t>(c.size()) + 1 ||
      c.tgt_offsets.size() != static_cast<std::size_t>(c.size()) + 1) {
    fuzz::fail("offsets");
  }
  for (std::int64_t i = 0; i < c.size(); ++i) {
    if (c.src_length(i) <= 0 || c.tgt_length(i) <= 0) fuzz::fail("an empty pair kept");
  }
  for (const auto* tokens : {&c.src_tokens, &c.tgt_tokens}) {
    for (const std::int32_t id : *tokens) {
      if (id < 0 || id >= vocab.size()) fuzz::fail("a token id outside the vocabulary");
    }
  }
}

void check_utf8(std::string_view bytes) {
  if (utf8::find_invalid(bytes) == std::string_view::npos) {
    if (utf8::encode(utf8::decode(bytes)) != bytes) fuzz::fail("UTF-8 round trip");
  }
  std::size_t replaced = 0;
  const std::string fixed = utf8::replace_invalid(bytes, &replaced);
  if (utf8::find_invalid(fixed) != std::string_view::npos) fuzz::fail("replace_invalid left invalid UTF-8");
  if ((replaced == 0) != (fixed == bytes)) fuzz::fail("replace_invalid's count");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::quiet();
  const text::Vocabulary& vocab = vocabulary();
  const std::string_view bytes = fuzz::as_text(data, size);
  check_utf8(bytes);
  try {
    const io::TextLines lines = io::text_lines_from_bytes("input.txt", std::string(bytes));
    for (const std::string_view line : lines.lines) {
      if (utf8::find_invalid(line) != std::string_view::npos) fuzz::fail("an invalid line passed");
    }
  } catch (const Error&) {
  }

  const std::vector<std::string> parts = fuzz::split_parts(bytes, 2);
  data::CorpusOptions pair;
  pair.source = fuzz::write_temp("train.src", parts[0]);
  pair.target = fuzz::write_temp("train.tgt", parts[1]);
  pair.max_length = 20;
  try {
    (void)data::check_parallel_corpus(pair);
    check_encoded(data::load_parallel_corpus(pair, vocab, "", 1), vocab);
  } catch (const Error&) {
  }

  data::CorpusOptions tsv;
  tsv.tsv = pair.source;
  tsv.max_ratio = 0;
  try {
    (void)data::check_parallel_corpus(tsv);
    check_encoded(data::load_parallel_corpus(tsv, vocab, "", 1), vocab);
    data::split_tsv_file(tsv.tsv, fuzz::temp_dir() + "/split.src", fuzz::temp_dir() + "/split.tgt");
  } catch (const Error&) {
  }
  return 0;
}
