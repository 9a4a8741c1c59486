// SentencePiece vocabularies (see vocabulary.h).
#include "text/vocabulary.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <unordered_map>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "io/text_lines.h"

// Exported by libsentencepiece but declared only in its internal common.h: 0 logs INFO (every merge
// of BPE training), 1 WARNING and above.
namespace sentencepiece::logging {
void SetMinLogLevel(int level);
}

namespace dragoman {
namespace {

// Feeds SentencePiece the non-empty lines of the input files, one file in memory at a time.
// read_text_lines validates UTF-8 and names file and line on error.
class FileSentences : public sentencepiece::SentenceIterator {
 public:
  explicit FileSentences(const std::vector<std::string>& paths) : paths_(paths) { advance(); }

  bool done() const override { return file_ >= paths_.size(); }
  void Next() override {
    ++line_;
    advance();
  }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  // Moves to the next non-empty line at or after the current position, loading files as needed.
  void advance() {
    while (file_ < paths_.size()) {
      if (!lines_) {
        lines_ = std::make_unique<TextLines>(read_text_lines(paths_[file_]));
        line_ = 0;
      }
      while (line_ < lines_->lines.size() && lines_->lines[line_].empty()) ++line_;
      if (line_ < lines_->lines.size()) {
        value_.assign(lines_->lines[line_]);
        return;
      }
      lines_.reset();
      ++file_;
    }
  }

  std::vector<std::string> paths_;
  std::size_t file_ = 0, line_ = 0;
  std::unique_ptr<TextLines> lines_;
  std::string value_;
};

std::string join(const std::vector<std::string>& items, char separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? std::string(1, separator) : "") + items[i];
  return out;
}

}  // namespace

Vocabulary::Vocabulary(Vocabulary&&) noexcept = default;
Vocabulary& Vocabulary::operator=(Vocabulary&&) noexcept = default;
Vocabulary::~Vocabulary() = default;

Vocabulary Vocabulary::train(const VocabularyOptions& o) {
  if (o.inputs.empty()) throw Error("build-vocab: no input files");
  if (o.model_type != "bpe" && o.model_type != "unigram") {
    throw Error("build-vocab: model type '" + o.model_type + "' is not bpe or unigram");
  }
  if (o.vocab_size < 5) throw Error("build-vocab: vocabulary size must be at least 5 (4 special pieces + 1)");
  for (const std::string& symbol : o.user_defined_symbols) {
    if (symbol.empty() || symbol.find(',') != std::string::npos) {
      throw Error("build-vocab: user-defined symbol '" + symbol + "' must be non-empty and contain no comma");
    }
  }
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", o.model_type},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"input_sentence_size", std::to_string(o.input_sentence_size)},
      {"shuffle_input_sentence", "true"},
      {"num_threads", std::to_string(std::max(1, o.threads))},
      {"pad_id", std::to_string(kPadId)},
      {"unk_id", std::to_string(kUnkId)},
      {"bos_id", std::to_string(kBosId)},
      {"eos_id", std::to_string(kEosId)},
      {"pad_piece", "<pad>"},
      {"unk_piece", "<unk>"},
      {"bos_piece", "<s>"},
      {"eos_piece", "</s>"},
      {"user_defined_symbols", join(o.user_defined_symbols, ',')},
      {"hard_vocab_limit", "true"},
  };
  // Read every file once before training, so bad input fails fast (file:line) and not midway.
  std::size_t lines = 0;
  for (const std::string& path : o.inputs) lines += read_text_lines(path).lines.size();
  sentencepiece::SetRandomGeneratorSeed(o.seed);
  sentencepiece::logging::SetMinLogLevel(o.verbose ? 0 : 1);
  FileSentences sentences(o.inputs);
  if (sentences.done() || lines == 0) throw Error("build-vocab: the input files hold no non-empty line");
  std::string bytes;
  const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(args, &sentences, &bytes);
  if (!status.ok()) throw Error("build-vocab: SentencePiece training failed: " + status.ToString());
  return from_bytes(bytes, "trained vocabulary");
}

Vocabulary Vocabulary::from_bytes(const std::string& bytes, const std::string& name) {
  Vocabulary v;
  v.name_ = name;
  v.bytes_ = bytes;
  v.processor_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  sentencepiece::util::Status status;
  try {
    status = v.processor_->LoadFromSerializedProto(bytes);
  } catch (const std::exception& e) {  // its trie builder throws on some malformed models (an empty piece)
    throw Error(name + ": not a usable SentencePiece model: " + e.what());
  }
  if (!status.ok()) throw Error(name + ": not a SentencePiece model: " + status.ToString());
  const auto special = [&](const char* what, std::int32_t expected, int actual) {
    if (actual != expected) {
      throw Error(name + ": " + what + " id is " + std::to_string(actual) + ", Dragoman needs " +
                  std::to_string(expected) + " (train vocabularies with dragoman build-vocab)");
    }
  };
  special("pad", kPadId, v.processor_->pad_id());
  special("unk", kUnkId, v.processor_->unk_id());
  special("bos", kBosId, v.processor_->bos_id());
  special("eos", kEosId, v.processor_->eos_id());
  return v;
}

Vocabulary Vocabulary::load(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  return from_bytes(std::string(bytes.begin(), bytes.end()), path);
}

std::int64_t Vocabulary::size() const { return processor_->GetPieceSize(); }

std::string Vocabulary::piece(std::int32_t id) const { return processor_->IdToPiece(id); }

float Vocabulary::score(std::int32_t id) const { return processor_->GetScore(id); }

std::vector<std::int32_t> Vocabulary::encode(std::string_view text) const {
  std::vector<int> ids;
  const sentencepiece::util::Status status = processor_->Encode(text, &ids);
  if (!status.ok()) throw Error(name_ + ": encoding failed: " + status.ToString());
  return {ids.begin(), ids.end()};
}

std::string Vocabulary::decode(const std::vector<std::int32_t>& ids) const {
  std::string text;
  const sentencepiece::util::Status status = processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  if (!status.ok()) throw Error(name_ + ": decoding failed: " + status.ToString());
  return text;
}

Vocabulary::Spans Vocabulary::encode_with_spans(std::string_view text) const {
  const sentencepiece::ImmutableSentencePieceText proto = processor_->EncodeAsImmutableProto(text);
  Spans out;
  for (const auto& piece : proto.pieces()) {
    if (piece.begin() > piece.end() || piece.end() > text.size()) {
      throw Error(name_ + ": encoding gave a piece at bytes " + std::to_string(piece.begin()) + "-" +
                  std::to_string(piece.end()) + " of a " + std::to_string(text.size()) +
                  "-byte text: a malformed vocabulary");
    }
    out.ids.push_back(static_cast<std::int32_t>(piece.id()));
    out.spans.emplace_back(piece.begin(), piece.end());
  }
  return out;
}

std::string Vocabulary::decode_with_spans(const std::vector<std::int32_t>& ids,
                                          std::vector<std::pair<std::size_t, std::size_t>>& spans) const {
  const sentencepiece::ImmutableSentencePieceText proto =
      processor_->DecodeIdsAsImmutableProto(std::vector<int>(ids.begin(), ids.end()));
  if (proto.pieces_size() != ids.size()) {
    throw Error(name_ + ": decoding gave " + std::to_string(proto.pieces_size()) + " pieces for " +
                std::to_string(ids.size()) + " ids");
  }
  spans.clear();
  const std::string& text = proto.text();
  for (const auto& piece : proto.pieces()) {
    // A malformed model can make SentencePiece report spans past its own text (found by fuzzing).
    if (piece.begin() > piece.end() || piece.end() > text.size()) {
      throw Error(name_ + ": decoding gave a piece at bytes " + std::to_string(piece.begin()) + "-" +
                  std::to_string(piece.end()) + " of a " + std::to_string(text.size()) +
                  "-byte text: a malformed vocabulary");
    }
    spans.emplace_back(piece.begin(), piece.end());
  }
  return text;
}

void Vocabulary::save(const std::string& prefix) const {
  std::string listing;
  for (std::int32_t id = 0; id < size(); ++id) {
    char score_text[32];
    std::snprintf(score_text, sizeof score_text, "%g", static_cast<double>(score(id)));
    listing += piece(id) + "\t" + score_text + "\n";
  }
  write_file_atomically(prefix + ".model", bytes_);
  write_file_atomically(prefix + ".vocab", listing);
}

}  // namespace dragoman
