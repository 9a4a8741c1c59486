// Bounds proofs for SentencePiece's precompiled normalization rules (see sentencepiece_check.h).
#include "text/sentencepiece_check.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace dragoman::text {
namespace {

// The protobuf wire format, just enough to find two fields: a reader over one message's bytes.
class WireReader {
 public:
  WireReader(std::string_view bytes, const std::string& name) : bytes_(bytes), name_(name) {}

  bool done() const { return pos_ >= bytes_.size(); }

  // The next field: its number, and its bytes if it is length-delimited (others are skipped).
  std::uint64_t next(std::string_view* payload) {
    const std::uint64_t key = varint();
    const auto wire_type = static_cast<unsigned>(key & 7);
    *payload = {};
    switch (wire_type) {
      case 0: (void)varint(); break;
      case 1: skip(8); break;
      case 5: skip(4); break;
      case 2: {
        const std::uint64_t length = varint();
        if (length > bytes_.size() - pos_) fail("a field runs past the end of its message");
        *payload = bytes_.substr(pos_, static_cast<std::size_t>(length));
        pos_ += static_cast<std::size_t>(length);
        break;
      }
      default: fail("wire type " + std::to_string(wire_type) + " (groups are not used by SentencePiece models)");
    }
    return key >> 3;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(name_ + ": not a SentencePiece model: " + what); }
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) fail("a number runs past the end of its message");
      const auto byte = static_cast<std::uint8_t>(bytes_[pos_++]);
      value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    fail("a number longer than 10 bytes");
  }
  void skip(std::size_t n) {
    if (n > bytes_.size() - pos_) fail("a field runs past the end of its message");
    pos_ += n;
  }

  std::string_view bytes_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

// A Darts-clone double-array unit (third_party/darts_clone/darts.h in SentencePiece's sources).
bool has_leaf(std::uint32_t unit) { return ((unit >> 8) & 1) == 1; }
std::uint32_t value_of(std::uint32_t unit) { return unit & ((1U << 31) - 1); }
std::uint32_t label_of(std::uint32_t unit) { return unit & ((1U << 31) | 0xFF); }
std::uint32_t offset_of(std::uint32_t unit) { return (unit >> 10) << ((unit & (1U << 9)) >> 6); }

}  // namespace

void check_precompiled_charsmap(std::string_view blob, const std::string& what) {
  if (blob.empty()) return;
  const auto fail = [&](const std::string& problem) { throw Error(what + ": " + problem); };
  // Decoded as Normalizer::DecodePrecompiledCharsMap does. It refuses a trie size >= the whole
  // blob's, header included, then takes that many bytes after the header: a size within 4 bytes of
  // the blob's passes its check and reads past the end. Here the trie must fit after the header.
  std::uint32_t trie_bytes = 0;
  if (blob.size() <= sizeof trie_bytes) fail("the normalization rules are shorter than their header");
  std::memcpy(&trie_bytes, blob.data(), sizeof trie_bytes);  // little-endian, as x86-64 and ARM64 are
  if (trie_bytes > blob.size() - sizeof trie_bytes) fail("the normalization trie is longer than its rules");
  const std::string_view trie = blob.substr(sizeof trie_bytes, trie_bytes);
  const std::size_t replacements = blob.size() - sizeof trie_bytes - trie_bytes;
  const std::size_t units = trie.size() / sizeof(std::uint32_t);
  if (units == 0) fail("the normalization trie is empty");
  const auto unit = [&](std::size_t i) {
    std::uint32_t u = 0;
    std::memcpy(&u, trie.data() + i * sizeof u, sizeof u);
    return u;
  };

  // commonPrefixSearch starts at unit 0; from a state whose transitions start at `base`, input
  // byte c reads unit base ^ c and, if its label is c, moves on to that unit's base (reading its
  // leaf's value there if it has one). Every byte can follow every state, so a reachable state must
  // have all 256 of its transitions inside the trie (base | 0xFF, as c only changes the low byte).
  std::vector<bool> seen(units, false);
  std::vector<std::size_t> pending{offset_of(unit(0))};
  while (!pending.empty()) {
    const std::size_t base = pending.back();
    pending.pop_back();
    if ((base | 0xFF) >= units) fail("the normalization trie has a state whose transitions lie outside it");
    if (seen[base]) continue;
    seen[base] = true;
    for (std::uint32_t c = 0; c < 256; ++c) {
      const std::uint32_t u = unit(base ^ c);
      if (label_of(u) != c) continue;
      const std::size_t next = (base ^ c) ^ offset_of(u);
      if (has_leaf(u)) {
        if (next >= units) fail("the normalization trie has a rule outside it");
        if (value_of(unit(next)) >= replacements) fail("a normalization rule's replacement lies outside the rules");
      }
      pending.push_back(next);
    }
  }
}

void check_sentencepiece_charsmaps(std::string_view bytes, const std::string& name) {
  // ModelProto: normalizer_spec = 3, denormalizer_spec = 5; NormalizerSpec: precompiled_charsmap = 2.
  // Repeated occurrences merge (the last charsmap wins), so every one found is checked.
  WireReader model(bytes, name);
  while (!model.done()) {
    std::string_view spec;
    const std::uint64_t field = model.next(&spec);
    if (field != 3 && field != 5) continue;
    const std::string what = name + (field == 3 ? ": normalizer" : ": denormalizer");
    WireReader reader(spec, name);
    while (!reader.done()) {
      std::string_view charsmap;
      if (reader.next(&charsmap) == 2) check_precompiled_charsmap(charsmap, what);
    }
  }
}

}  // namespace dragoman::text
