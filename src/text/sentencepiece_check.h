// Checks the parts of a serialized SentencePiece model that the library trusts without checking.
//
// A model's normalization rules (NormalizerSpec.precompiled_charsmap, for encoding, and the
// denormalizer's, for decoding) are a Darts double-array trie plus the replacement strings.
// libsentencepiece loads them as they are and walks the trie with the input's bytes: a damaged or
// hostile trie makes it read outside the model (a crash found by fuzz_vocab). This walks every
// state such a search can reach, for every input byte, and proves each read in bounds.
#pragma once

#include <string>
#include <string_view>

namespace dragoman::text {

// Throws Error("NAME: ...") naming the rule set and what is wrong if a precompiled charsmap of the
// serialized ModelProto in `bytes` could make SentencePiece read outside it, or if the bytes are
// not protobuf wire format. Call it on bytes libsentencepiece has parsed (so they are a ModelProto).
void check_sentencepiece_charsmaps(std::string_view bytes, const std::string& name);

// One precompiled charsmap (<trie size: u32 LE><trie units><replacements>): throws Error naming
// `what` if SentencePiece's search of it could read outside it. Empty means no rules (accepted).
void check_precompiled_charsmap(std::string_view blob, const std::string& what);

}  // namespace dragoman::text
