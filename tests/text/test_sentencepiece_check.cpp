// SentencePiece's precompiled normalization rules are checked before the library walks them: a
// hand-built trie that SentencePiece itself uses (so the layout the check proves is the library's),
// real models' rules, and each way a damaged trie could send the library's search outside it.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "base/error.h"
#include "io/read_file.h"
#include "text/sentencepiece_check.h"
#include "text/vocabulary.h"

namespace dragoman::text {
namespace {

std::string file_bytes(const std::string& path) {
  const std::vector<char> bytes = io::read_file(path);
  return {bytes.begin(), bytes.end()};
}

// Darts-clone units: a transition (label, offset to its state's base, leaf flag) and a leaf value.
std::uint32_t transition(std::uint32_t label, std::uint32_t offset, bool leaf) {
  return (offset << 10) | (leaf ? 1U << 8 : 0U) | label;
}
std::uint32_t leaf_value(std::uint32_t value) { return (1U << 31) | value; }

// Rules that replace the byte `from` with the string `to`: the root's transitions at 256, `from`'s
// leaf at 512, 768 units in all.
struct Rules {
  std::vector<std::uint32_t> units = std::vector<std::uint32_t>(768, 0);
  std::string replacements;

  Rules(char from, const std::string& to) : replacements(to + '\0') {
    const auto c = static_cast<std::uint8_t>(from);
    units[0] = transition(0, 256, false);
    units[256 ^ c] = transition(c, (256 ^ c) ^ 512, true);
    units[512] = leaf_value(0);
  }
  std::string blob() const {
    std::string b(4, '\0');
    const auto size = static_cast<std::uint32_t>(units.size() * 4);
    std::memcpy(b.data(), &size, 4);
    b.append(reinterpret_cast<const char*>(units.data()), units.size() * 4);
    return b + replacements;
  }
};

std::string varint(std::size_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7F) | 0x80);
  return out + static_cast<char>(v);
}

// A ModelProto field `field` (normalizer_spec 3, denormalizer_spec 5) holding just a charsmap.
// Appended to a serialized model it merges into the spec there, its charsmap replacing the one there.
std::string spec_with_charsmap(int field, const std::string& charsmap) {
  const std::string spec = '\x12' + varint(charsmap.size()) + charsmap;  // precompiled_charsmap = 2
  return static_cast<char>(field << 3 | 2) + varint(spec.size()) + spec;
}

const std::string& real_model() {
  static const std::string bytes = file_bytes(DRAGOMAN_SOURCE_DIR "/fuzz/seeds/fuzz_vocab/bpe-100.model");
  return bytes;
}

}  // namespace

TEST_CASE("SentencePiece uses hand-built normalization rules as the check reads them", "[text]") {
  // The normalizer replaces a with b on encoding; the denormalizer b with c on decoding.
  const std::string bytes = real_model() + spec_with_charsmap(3, Rules('a', "b").blob());
  CHECK_NOTHROW(check_sentencepiece_charsmaps(bytes, "rules"));
  const Vocabulary v = Vocabulary::from_bytes(bytes, "rules");
  CHECK(v.decode(v.encode("a")) == "b");
  CHECK(v.decode(v.encode("nah")) == "nbh");

  const Vocabulary both = Vocabulary::from_bytes(bytes + spec_with_charsmap(5, Rules('b', "c").blob()), "rules");
  // (SentencePiece's decoding keeps the first piece's word mark when it denormalizes.)
  CHECK_THAT(both.decode(both.encode("nah")), Catch::EndsWith("nch"));
}

TEST_CASE("Decoding spans past a denormalized text are refused as a malformed vocabulary", "[text]") {
  // Valid rules that delete every a when decoding: SentencePiece reports each piece's bytes in the
  // text before its denormalizer shortened it, so spans run past the decoded text.
  const Vocabulary v = Vocabulary::from_bytes(real_model() + spec_with_charsmap(5, Rules('a', "").blob()), "odd.model");
  const Vocabulary::Spans spans = v.encode_with_spans("banana bandana");
  std::vector<std::pair<std::size_t, std::size_t>> out;
  CHECK_THROWS_WITH(v.decode_with_spans(spans.ids, out), Catch::Contains("odd.model: decoding gave a piece at bytes") &&
                                                             Catch::Contains("a malformed vocabulary"));
}

TEST_CASE("Real SentencePiece models' normalization rules pass the check", "[text]") {
  // build-vocab's default rules: SentencePiece's NFKC table (over 200 KB of trie and strings).
  const auto corpus = std::filesystem::temp_directory_path() / ("dragoman_spcheck_" + std::to_string(::getpid()));
  {
    std::ofstream out(corpus);
    for (int i = 0; i < 200; ++i) out << "Die Katze Nr. " << i << " schläft ﬁne im Haus – „ja“.\n";
  }
  VocabularyOptions o;
  o.inputs = {corpus.string()};
  o.vocab_size = 60;
  const Vocabulary nfkc = Vocabulary::train(o);  // from_bytes: checked
  std::filesystem::remove(corpus);
  CHECK(nfkc.bytes().size() > 200000);
  CHECK_NOTHROW(check_sentencepiece_charsmaps(nfkc.bytes(), "nfkc"));
  CHECK(nfkc.decode(nfkc.encode("ﬁne")) == "fine");  // the rules are in use

  CHECK_NOTHROW(check_sentencepiece_charsmaps(real_model(), "bpe"));
  for (const char* path : {"/marian/hf-tiny/source.spm", "/marian/hf-tiny/target.spm"}) {
    const std::string bytes = file_bytes(std::string(DRAGOMAN_TEST_FIXTURES) + path);
    CHECK_NOTHROW(check_sentencepiece_charsmaps(bytes, path));
  }
}

TEST_CASE("Damaged normalization tries are refused before SentencePiece walks them", "[text]") {
  const auto refused = [](const std::string& blob, const std::string& expected) {
    CHECK_THROWS_WITH(check_precompiled_charsmap(blob, "model.spm: normalizer"),
                      Catch::Contains("model.spm: normalizer") && Catch::Contains(expected));
    // The same rules inside a model: refused by the vocabulary loader, naming the denormalizer.
    CHECK_THROWS_WITH(Vocabulary::from_bytes(real_model() + spec_with_charsmap(5, blob), "model.spm"),
                      Catch::Contains("model.spm: denormalizer") && Catch::Contains(expected));
  };
  CHECK_NOTHROW(check_precompiled_charsmap("", "none"));
  refused("\x01\x00\x00", "shorter than their header");
  refused(std::string("\x10\x00\x00\x00", 4) + "abcd", "longer than its rules");
  // 9 bytes of trie in a 10-byte blob: SentencePiece's own check (size < the blob's) passes it.
  refused(std::string("\x09\x00\x00\x00", 4) + "abcdef", "longer than its rules");
  refused(std::string("\x00\x00\x00\x00", 4) + "abcd", "trie is empty");  // the fuzz_vocab crash

  Rules root_outside('a', "b");
  root_outside.units[0] = transition(0, 1024, false);
  refused(root_outside.blob(), "transitions lie outside it");

  Rules state_outside('a', "b");
  state_outside.units[256 ^ 'a'] = transition('a', (256 ^ 'a') ^ 2048, false);
  refused(state_outside.blob(), "transitions lie outside it");

  Rules leaf_outside('a', "b");
  leaf_outside.units[256 ^ 'a'] = transition('a', (256 ^ 'a') ^ 2048, true);
  refused(leaf_outside.blob(), "a rule outside it");

  Rules value_outside('a', "b");
  value_outside.units[512] = leaf_value(2);  // "b\0" holds 2 bytes
  refused(value_outside.blob(), "replacement lies outside the rules");

  // A cycle (a state that leads back to the root) is finite for the check and in bounds.
  Rules cycle('a', "b");
  cycle.units[256 ^ 'a'] = transition('a', (256 ^ 'a') ^ 256, false);
  CHECK_NOTHROW(check_precompiled_charsmap(cycle.blob(), "cycle"));
}

TEST_CASE("A model that is not protobuf wire format is refused by the check", "[text]") {
  CHECK_THROWS_WITH(check_sentencepiece_charsmaps(std::string("\x1a\x05\x12", 3), "m"),
                    Catch::Contains("m: not a SentencePiece model") && Catch::Contains("past the end"));
  CHECK_THROWS_WITH(check_sentencepiece_charsmaps(std::string("\x0b", 1), "m"), Catch::Contains("groups"));
  CHECK_THROWS_WITH(check_sentencepiece_charsmaps(std::string(11, '\xff'), "m"), Catch::Contains("10 bytes"));
}

}  // namespace dragoman::text
