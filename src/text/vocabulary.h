// Vocabularies: SentencePiece models (BPE or unigram) trained with the SentencePiece library and
// used to turn text into token ids and back. Dragoman fixes the special ids of every vocabulary it
// trains, so models and data agree without configuration:
//   pad 0 (<pad>), unk 1 (<unk>), bos 2 (<s>), eos 3 (</s>)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace dragoman::text {

inline constexpr std::int32_t kPadId = 0;
inline constexpr std::int32_t kUnkId = 1;
inline constexpr std::int32_t kBosId = 2;
inline constexpr std::int32_t kEosId = 3;

struct VocabularyOptions {
  std::vector<std::string> inputs;  // text files, one sentence per line (UTF-8); empty lines skipped
  std::string model_type = "bpe";   // "bpe" or "unigram"
  std::int64_t vocab_size = 8000;
  double character_coverage = 1.0;                // share of characters covered; the rest map to <unk>
  std::int64_t input_sentence_size = 0;           // sample this many sentences (0: all)
  std::vector<std::string> user_defined_symbols;  // always kept as one piece each
  std::uint32_t seed = 1;                         // sampling and training randomness
  int threads = 1;
  bool verbose = false;  // SentencePiece's own progress log on stderr
};

// How an imported model numbers its pieces (docs/MODELS.md): Marian's vocab.yml and MarianMT's
// vocab.json give every piece its id, independently of the SentencePiece model that cuts the text
// (whose own ids and special pieces are then not used). A piece the table lacks is unk_id; encoding
// appends eos_id when append_eos (Marian and MarianMT end every source sentence with </s>); a text
// that starts with a language token (">>fra<<", multilingual OPUS-MT models) gives its id first;
// decoding drops the `special` ids (as MarianMT's tokenizer does: </s>, <unk>, <pad>).
struct PieceTable {
  std::vector<std::string> pieces;  // by id
  std::int32_t unk_id = 1;
  std::int32_t eos_id = 0;
  bool append_eos = false;
  std::vector<std::int32_t> special;

  std::string to_json() const;
  // `name` is used in messages (a file, or a model file's tensor).
  static PieceTable from_json(const std::string& json, const std::string& name);
};

// The pieces of a SentencePiece model's bytes, by its own ids (Marian's .spm vocabularies).
std::vector<std::string> sentencepiece_pieces(const std::string& bytes, const std::string& name);

// A model's vocabulary: text -> source ids (encode) and target ids -> text (decode). Dragoman's
// own models have one SentencePiece model for both; an imported model may have one per side, each
// with a PieceTable (Vocabulary::pair).
class Vocabulary {
 public:
  // Trains a SentencePiece model on the inputs. Invalid UTF-8 is an error naming the file and line.
  static Vocabulary train(const VocabularyOptions& options);
  // A model from its serialized bytes (a .model file's content); `name` is used in messages.
  static Vocabulary from_bytes(const std::string& bytes, const std::string& name);
  static Vocabulary load(const std::string& path);
  // An imported vocabulary side: SentencePiece bytes that cut the text, `table` that numbers pieces.
  static Vocabulary with_table(const std::string& bytes, PieceTable table, const std::string& name);
  // Source and target sides: encode (and encode_with_spans) use `source`; decode, decode_with_spans,
  // piece and encode_target use `target`.
  static Vocabulary pair(Vocabulary source, Vocabulary target);

  Vocabulary(Vocabulary&&) noexcept;
  Vocabulary& operator=(Vocabulary&&) noexcept;
  ~Vocabulary();

  std::int64_t size() const;  // the source side's ids
  std::int64_t target_size() const { return target().size(); }
  const std::string& bytes() const { return bytes_; }       // the serialized model (of the source side)
  const PieceTable* table() const { return table_.get(); }  // an imported side's; nullptr for ours
  const Vocabulary& target() const { return target_ ? *target_ : *this; }
  std::string piece(std::int32_t id) const;  // a target id's piece
  // The id of `piece` on this side (source: this; target: target().piece_id), -1 when the side has
  // no such piece.
  std::int32_t piece_id(std::string_view piece) const;
  float score(std::int32_t id) const;

  // Source token ids of a sentence (no BOS/EOS added, except the EOS of a table with append_eos).
  std::vector<std::int32_t> encode(std::string_view text) const;
  // Target token ids of a sentence (no BOS/EOS added).
  std::vector<std::int32_t> encode_target(std::string_view text) const;
  // The text of target token ids (special ids are dropped).
  std::string decode(const std::vector<std::int32_t>& ids) const;

  // The same, with each piece's bytes [begin, end) in `text` (SentencePiece's surface spans: the
  // input's bytes a piece came from; 0-length for a piece that has none of its own).
  struct Spans {
    std::vector<std::int32_t> ids;
    std::vector<std::pair<std::size_t, std::size_t>> spans;
  };
  Spans encode_with_spans(std::string_view text) const;
  // The text of `ids` and each id's bytes in it (special ids: empty spans).
  std::string decode_with_spans(const std::vector<std::int32_t>& ids,
                                std::vector<std::pair<std::size_t, std::size_t>>& spans) const;

  // Writes PREFIX.model (the bytes) and PREFIX.vocab (piece TAB score per line), atomically.
  void save(const std::string& prefix) const;

 private:
  Vocabulary() = default;
  std::vector<std::int32_t> encode_side(std::string_view text, bool add_eos) const;
  Spans encode_table(std::string_view text, bool add_eos) const;
  std::int32_t table_id(std::string_view piece) const;
  std::string name_;
  std::string bytes_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::unique_ptr<PieceTable> table_;
  std::unique_ptr<std::unordered_map<std::string, std::int32_t>> ids_;  // table_'s pieces -> ids
  std::unique_ptr<Vocabulary> target_;
};

}  // namespace dragoman::text
