// Parallel corpora: aligned reading of two files or one TSV file, clear errors naming the file and
// line, filtering with counts, and the encoded cache (reused, and rebuilt when anything it was
// made from changes or it is damaged).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/hash.h"
#include "data/corpus.h"
#include "train/train_testing.h"

namespace dragoman {
namespace {

using Catch::Matchers::Contains;

struct Fixture {
  std::string dir = test::scratch_dir("corpus");
  text::Vocabulary vocab = text::Vocabulary::load(test::write_letters_vocabulary(dir));

  data::CorpusOptions pair(const std::string& src, const std::string& tgt) const {
    data::CorpusOptions o;
    o.source = dir + "/c.src";
    o.target = dir + "/c.tgt";
    test::write_text(o.source, src);
    test::write_text(o.target, tgt);
    return o;
  }
};

}  // namespace

TEST_CASE("corpus: aligned files are encoded pair by pair with their line numbers", "[data]") {
  Fixture f;
  const data::CorpusOptions o = f.pair("a b c\nd e\nf\n", "c b a\ne d\nf\n");
  const data::EncodedCorpus c = data::load_parallel_corpus(o, f.vocab, "", 1);
  REQUIRE(c.size() == 3);
  CHECK(c.src(0) == f.vocab.encode("a b c"));
  CHECK(c.tgt(1) == f.vocab.encode("e d"));
  CHECK(c.src_length(2) == 1);
  CHECK(c.line_numbers == std::vector<std::int64_t>{1, 2, 3});
  CHECK(c.counts.total == 3);
  CHECK(c.counts.kept == 3);
}

TEST_CASE("corpus: a TSV file gives the same pairs as two files", "[data]") {
  Fixture f;
  const data::EncodedCorpus two = data::load_parallel_corpus(f.pair("a b\nc\n", "b a\nc\n"), f.vocab, "", 1);
  data::CorpusOptions tsv;
  tsv.tsv = f.dir + "/c.tsv";
  test::write_text(tsv.tsv, "a b\tb a\nc\tc\n");
  const data::EncodedCorpus one = data::load_parallel_corpus(tsv, f.vocab, "", 1);
  CHECK(one.src_tokens == two.src_tokens);
  CHECK(one.tgt_tokens == two.tgt_tokens);
  CHECK(one.src_offsets == two.src_offsets);
  CHECK(one.line_numbers == two.line_numbers);

  // Its columns as two files (what a vocabulary is trained on), with the same checks.
  data::split_tsv_file(tsv.tsv, f.dir + "/cols.src", f.dir + "/cols.tgt");
  CHECK(test::read_text(f.dir + "/cols.src") == "a b\nc\n");
  CHECK(test::read_text(f.dir + "/cols.tgt") == "b a\nc\n");
  test::write_text(tsv.tsv, "a\tb\tc\n");
  CHECK_THROWS_WITH(data::split_tsv_file(tsv.tsv, f.dir + "/x.src", f.dir + "/x.tgt"), Contains("c.tsv:1:"));
}

TEST_CASE("corpus: bad input is an error naming the file and the line", "[data]") {
  Fixture f;
  SECTION("different line counts") {
    const data::CorpusOptions o = f.pair("a\nb\nc\n", "a\nb\n");
    CHECK_THROWS_WITH(data::load_parallel_corpus(o, f.vocab, "", 1),
                      Contains("c.src has 3 lines but") && Contains("c.tgt has 2"));
  }
  SECTION("invalid UTF-8") {
    const data::CorpusOptions o = f.pair("a\nb\n", "a\n\xff\xfe\n");
    CHECK_THROWS_WITH(data::load_parallel_corpus(o, f.vocab, "", 1), Contains("c.tgt:2:") && Contains("UTF-8"));
  }
  SECTION("a TSV line without exactly one tab") {
    data::CorpusOptions o;
    o.tsv = f.dir + "/bad.tsv";
    test::write_text(o.tsv, "a\tb\nc d\ne\tf\tg\n");
    CHECK_THROWS_WITH(data::load_parallel_corpus(o, f.vocab, "", 1), Contains("bad.tsv:2:") && Contains("one tab"));
    test::write_text(o.tsv, "a\tb\ne\tf\tg\n");
    CHECK_THROWS_WITH(data::load_parallel_corpus(o, f.vocab, "", 1), Contains("bad.tsv:2:"));
  }
  SECTION("a missing file") {
    data::CorpusOptions o = f.pair("a\n", "a\n");
    o.target = f.dir + "/missing.tgt";
    CHECK_THROWS_WITH(data::load_parallel_corpus(o, f.vocab, "", 1), Contains("missing.tgt"));
  }
}

TEST_CASE("corpus: empty, too long and badly proportioned pairs are dropped and counted", "[data]") {
  Fixture f;
  data::CorpusOptions o = f.pair("a b\n\na b c d e f g\na\na b c d\nc\n",  //
                                 "b a\nx\na\na b c d\na\n\n");
  o.max_length = 5;
  o.max_ratio = 3.0;
  const data::EncodedCorpus c = data::load_parallel_corpus(o, f.vocab, "", 2);
  CHECK(c.counts.total == 6);
  CHECK(c.counts.empty == 2);      // lines 2 and 6
  CHECK(c.counts.too_long == 1);   // line 3: 7 source tokens
  CHECK(c.counts.bad_ratio == 2);  // line 4: 1 vs 4 tokens, line 5: 4 vs 1
  CHECK(c.counts.kept == 1);
  CHECK(c.line_numbers == std::vector<std::int64_t>{1});

  o.max_ratio = 0;  // off
  CHECK(data::load_parallel_corpus(o, f.vocab, "", 1).line_numbers == std::vector<std::int64_t>{1, 4, 5});
  o.max_ratio = 4.0;  // a ratio of exactly 4 is kept
  CHECK(data::load_parallel_corpus(o, f.vocab, "", 1).counts.kept == 3);
}

TEST_CASE("corpus: the content hash of an empty view (its data() may be null)", "[data]") {
  // Found by fuzzing under UBSan: memcpy from a null pointer for an empty input file.
  CHECK(ContentHash().add(std::string_view()).value() == ContentHash().add(std::string_view("", 0)).value());
  CHECK(ContentHash().add(std::string_view()).value() != ContentHash().add("a").value());
}

TEST_CASE("corpus: the cache is used when valid and rebuilt when its inputs change", "[data]") {
  Fixture f;
  const std::string cache = f.dir + "/corpus.cache";
  data::CorpusOptions o = f.pair("a b\nc d\n", "b a\nd c\n");
  const data::EncodedCorpus mapped = data::load_parallel_corpus(o, f.vocab, cache, 1);
  REQUIRE(std::filesystem::exists(cache));
  CHECK(mapped.src_tokens.mapped());  // the result is the cache, mapped
  const std::string cached = test::read_text(cache);
  // A copy in memory: the sections below damage the cache file in place, which a mapping would see.
  data::EncodedCorpus first;
  first.src_tokens.append(mapped.src_tokens.begin(), mapped.src_tokens.end());
  first.tgt_tokens.append(mapped.tgt_tokens.begin(), mapped.tgt_tokens.end());
  first.tgt_offsets = data::Column<std::int64_t>{};
  first.tgt_offsets.append(mapped.tgt_offsets.begin(), mapped.tgt_offsets.end());

  // A second load reads the cache: same result, the file untouched.
  const data::EncodedCorpus again = data::load_parallel_corpus(o, f.vocab, cache, 1);
  CHECK(again.src_tokens == first.src_tokens);
  CHECK(again.tgt_offsets == first.tgt_offsets);
  CHECK(test::read_text(cache) == cached);

  SECTION("with the hash check_parallel_corpus gave, a valid cache is used without reading the inputs") {
    const std::uint64_t checked = data::check_parallel_corpus(o);
    std::filesystem::rename(o.source, o.source + ".away");  // not read again: the cache answers
    const data::EncodedCorpus cached_again = data::load_parallel_corpus(o, f.vocab, cache, 1, nullptr, checked);
    CHECK(cached_again.src_tokens == first.src_tokens);
    CHECK_THROWS_WITH(data::load_parallel_corpus(o, f.vocab, cache, 1, nullptr, checked + 1),
                      Catch::Contains("c.src"));  // another hash: the inputs are read (and one is away)
    std::filesystem::rename(o.source + ".away", o.source);
  }
  SECTION("a changed input file") {
    test::write_text(o.target, "b a\nd c e\n");
    const data::EncodedCorpus changed = data::load_parallel_corpus(o, f.vocab, cache, 1);
    CHECK(changed.tgt(1) == f.vocab.encode("d c e"));
    CHECK(test::read_text(cache) != cached);
  }
  SECTION("changed filter settings") {
    o.max_length = 1;
    CHECK(data::load_parallel_corpus(o, f.vocab, cache, 1).counts.too_long == 2);
  }
  SECTION("a damaged cache") {
    test::write_text(cache, cached.substr(0, cached.size() - 3));
    const data::EncodedCorpus rebuilt = data::load_parallel_corpus(o, f.vocab, cache, 1);
    CHECK(rebuilt.src_tokens == first.src_tokens);
    CHECK(test::read_text(cache) == cached);
  }
  SECTION("a cache whose tokens were altered (the checksum catches it)") {
    std::string altered = cached;
    altered[altered.size() - 9] = static_cast<char>(altered[altered.size() - 9] + 1);  // the last token
    test::write_text(cache, altered);
    CHECK(data::load_parallel_corpus(o, f.vocab, cache, 1).tgt_tokens == first.tgt_tokens);
    CHECK(test::read_text(cache) == cached);
  }
  SECTION("a cache whose counts are too large for its bytes, with a matching checksum") {
    // n (= kept, and total) near 2^62: its arrays' size would overflow; the cache is rebuilt.
    std::string altered = cached.substr(0, cached.size() - 8);
    const std::int64_t huge = (std::int64_t{1} << 62) + 1;
    std::int64_t total = 0;
    std::memcpy(&total, altered.data() + 32, 8);
    std::memcpy(altered.data() + 32, &(total += huge), 8);  // counts.total
    std::int64_t kept = 0;
    std::memcpy(&kept, altered.data() + 64, 8);
    std::memcpy(altered.data() + 64, &(kept += huge), 8);  // counts.kept
    std::memcpy(altered.data() + 72, &kept, 8);            // n
    const std::uint64_t checksum = ContentHash().add(altered).value();
    altered.append(reinterpret_cast<const char*>(&checksum), 8);
    test::write_text(cache, altered);
    CHECK(data::load_parallel_corpus(o, f.vocab, cache, 1).src_tokens == first.src_tokens);
    CHECK(test::read_text(cache) == cached);
  }
  SECTION("a mapped corpus stays as it was when the cache is rebuilt (written anew, then renamed)") {
    test::write_text(o.target, "b a\nd c e\n");
    const data::EncodedCorpus changed = data::load_parallel_corpus(o, f.vocab, cache, 1);
    CHECK(changed.tgt(1) == f.vocab.encode("d c e"));
    CHECK(mapped.tgt_tokens == first.tgt_tokens);
  }
  SECTION("a cache of the earlier format (version 2) is rebuilt") {
    std::string old = cached.substr(0, cached.size() - 8);
    const std::uint64_t version = 2;
    std::memcpy(old.data() + 16, &version, 8);
    const std::uint64_t checksum = ContentHash().add(old).value();
    old.append(reinterpret_cast<const char*>(&checksum), 8);
    test::write_text(cache, old);
    CHECK(data::load_parallel_corpus(o, f.vocab, cache, 1).src_tokens == first.src_tokens);
    CHECK(test::read_text(cache) == cached);
  }
  // The inputs are never modified, and no temporary file stays behind.
  CHECK(test::read_text(o.source) == "a b\nc d\n");
  for (const auto& entry : std::filesystem::directory_iterator(f.dir)) {
    CHECK(entry.path().filename().string().find(".part-") == std::string::npos);
  }
}

TEST_CASE("corpus: a cache larger than a checksum block streams in and maps back the same corpus", "[data]") {
  Fixture f;
  const test::ReversalFiles files = test::write_reversal_corpus(f.dir, "big", 60000, 3);
  data::CorpusOptions o;
  o.source = files.source;
  o.target = files.target;
  const data::EncodedCorpus memory = data::load_parallel_corpus(o, f.vocab, "", 2);
  const data::EncodedCorpus cached = data::load_parallel_corpus(o, f.vocab, f.dir + "/big.cache", 2);
  REQUIRE(std::filesystem::file_size(f.dir + "/big.cache") > (1u << 20));
  CHECK(cached.src_tokens.mapped());
  CHECK(cached.size() == memory.size());
  CHECK(cached.src_tokens == memory.src_tokens);
  CHECK(cached.tgt_tokens == memory.tgt_tokens);
  CHECK(cached.src_offsets == memory.src_offsets);
  CHECK(cached.tgt_offsets == memory.tgt_offsets);
  CHECK(cached.line_numbers == memory.line_numbers);
  CHECK(data::check_parallel_corpus(o) != 0);
  // Mapped again: the same.
  CHECK(data::load_parallel_corpus(o, f.vocab, f.dir + "/big.cache", 2).tgt_tokens == memory.tgt_tokens);
}

TEST_CASE("corpus: thread count does not change the encoding", "[data]") {
  Fixture f;
  const test::ReversalFiles files = test::write_reversal_corpus(f.dir, "r", 3000, 5);
  data::CorpusOptions o;
  o.source = files.source;
  o.target = files.target;
  const data::EncodedCorpus one = data::load_parallel_corpus(o, f.vocab, "", 1);
  const data::EncodedCorpus two = data::load_parallel_corpus(o, f.vocab, "", 2);
  CHECK(one.size() == 3000);
  CHECK(one.src_tokens == two.src_tokens);
  CHECK(one.tgt_tokens == two.tgt_tokens);
}

}  // namespace dragoman
