// SentencePiece vocabularies (see vocabulary.h).
#include "text/vocabulary.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/atomic_file.h"
#include "io/read_file.h"
#include "io/text_lines.h"
#include "text/sentencepiece_check.h"

// Exported by libsentencepiece but declared only in its internal common.h: 0 logs INFO (every merge
// of BPE training), 1 WARNING and above.
namespace sentencepiece::logging {
void SetMinLogLevel(int level);
}

namespace dragoman::text {
namespace {

// Feeds SentencePiece the non-empty lines of the input files, streamed (a corpus may not fit in
// memory; SentencePiece keeps its own sample of input_sentence_size lines). The stream validates
// UTF-8 and names file and line on error.
class FileSentences : public sentencepiece::SentenceIterator {
 public:
  explicit FileSentences(const std::vector<std::string>& paths) : paths_(paths) { advance(); }

  bool done() const override { return file_ >= paths_.size(); }
  void Next() override { advance(); }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  // Moves to the next non-empty line, opening files as needed.
  void advance() {
    std::string_view line;
    while (file_ < paths_.size()) {
      if (!lines_) lines_ = std::make_unique<io::TextLineStream>(paths_[file_]);
      while (lines_->next(line)) {
        if (line.empty()) continue;
        value_.assign(line);
        return;
      }
      lines_.reset();
      ++file_;
    }
  }

  std::vector<std::string> paths_;
  std::size_t file_ = 0;
  std::unique_ptr<io::TextLineStream> lines_;
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
  for (const std::string& path : o.inputs) {
    io::TextLineStream stream(path);
    std::string_view line;
    while (stream.next(line)) ++lines;
  }
  sentencepiece::SetRandomGeneratorSeed(o.seed);
  sentencepiece::logging::SetMinLogLevel(o.verbose ? 0 : 1);
  FileSentences sentences(o.inputs);
  if (sentences.done() || lines == 0) throw Error("build-vocab: the input files hold no non-empty line");
  std::string bytes;
  const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(args, &sentences, &bytes);
  if (!status.ok()) throw Error("build-vocab: SentencePiece training failed: " + status.ToString());
  return from_bytes(bytes, "trained vocabulary");
}

namespace {

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_processor(const std::string& bytes,
                                                                      const std::string& name) {
  // Before the library sees them: loading runs the model's self-test samples through the rules.
  check_sentencepiece_charsmaps(bytes, name);
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  sentencepiece::util::Status status;
  try {
    status = processor->LoadFromSerializedProto(bytes);
  } catch (const std::exception& e) {  // its trie builder throws on some malformed models (an empty piece)
    throw Error(name + ": not a usable SentencePiece model: " + e.what());
  }
  if (!status.ok()) throw Error(name + ": not a SentencePiece model: " + status.ToString());
  return processor;
}

}  // namespace

std::vector<std::string> sentencepiece_pieces(const std::string& bytes, const std::string& name) {
  const auto processor = load_processor(bytes, name);
  std::vector<std::string> pieces;
  for (int id = 0; id < processor->GetPieceSize(); ++id) pieces.push_back(processor->IdToPiece(id));
  return pieces;
}

std::string PieceTable::to_json() const {
  return nlohmann::json{
      {"pieces", pieces}, {"unk_id", unk_id}, {"eos_id", eos_id}, {"append_eos", append_eos}, {"special", special}}
      .dump();
}

PieceTable PieceTable::from_json(const std::string& json, const std::string& name) {
  const auto fail = [&](const std::string& what) { throw Error(name + ": piece table: " + what); };
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) fail("not a JSON object");
  const auto id_of = [&](const nlohmann::json& v, const std::string& key) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > INT32_MAX) {
      fail("'" + key + "' must hold ids (integers from 0), got " + v.dump());
    }
    return static_cast<std::int32_t>(v.get<std::int64_t>());
  };
  PieceTable t;
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    const nlohmann::json& value = item.value();
    if (key == "pieces") {
      if (!value.is_array()) fail("'pieces' must be a list of strings");
      for (const nlohmann::json& p : value) {
        if (!p.is_string()) fail("'pieces' must be a list of strings");
        t.pieces.push_back(p.get<std::string>());
      }
    } else if (key == "unk_id" || key == "eos_id") {
      (key == "unk_id" ? t.unk_id : t.eos_id) = id_of(value, key);
    } else if (key == "append_eos") {
      if (!value.is_boolean()) fail("'append_eos' must be true or false");
      t.append_eos = value.get<bool>();
    } else if (key == "special") {
      if (!value.is_array()) fail("'special' must be a list of ids");
      for (const nlohmann::json& id : value) t.special.push_back(id_of(id, "special"));
    } else {
      fail("unknown key '" + key + "'");
    }
  }
  const auto size = static_cast<std::int64_t>(t.pieces.size());
  const auto check_id = [&](const char* what, std::int32_t id) {
    if (id < 0 || id >= size)
      fail(std::string(what) + " " + std::to_string(id) + " is outside the " + std::to_string(size) + " pieces");
  };
  check_id("unk_id", t.unk_id);
  check_id("eos_id", t.eos_id);
  for (const std::int32_t id : t.special) check_id("special id", id);
  return t;
}

Vocabulary Vocabulary::with_table(const std::string& bytes, PieceTable table, const std::string& name) {
  // The same checks as a stored table's (ids in range), and every piece once.
  table = PieceTable::from_json(table.to_json(), name);
  Vocabulary v;
  v.name_ = name;
  v.bytes_ = bytes;
  v.processor_ = load_processor(bytes, name);
  v.ids_ = std::make_unique<std::unordered_map<std::string, std::int32_t>>();
  for (std::size_t id = 0; id < table.pieces.size(); ++id) {
    if (!v.ids_->emplace(table.pieces[id], static_cast<std::int32_t>(id)).second) {
      throw Error(name + ": piece table: the piece '" + table.pieces[id] + "' has two ids");
    }
  }
  v.table_ = std::make_unique<PieceTable>(std::move(table));
  return v;
}

Vocabulary Vocabulary::pair(Vocabulary source, Vocabulary target) {
  if (source.target_ || target.target_) throw Error("Vocabulary::pair: a side is itself a pair");
  source.target_ = std::make_unique<Vocabulary>(std::move(target));
  return source;
}

std::int32_t Vocabulary::table_id(std::string_view piece) const {
  const auto it = ids_->find(std::string(piece));
  return it != ids_->end() ? it->second : table_->unk_id;
}

Vocabulary Vocabulary::from_bytes(const std::string& bytes, const std::string& name) {
  Vocabulary v;
  v.name_ = name;
  v.bytes_ = bytes;
  v.processor_ = load_processor(bytes, name);
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
  const std::vector<char> bytes = io::read_file(path);
  return from_bytes(std::string(bytes.begin(), bytes.end()), path);
}

std::int64_t Vocabulary::size() const {
  return table_ ? static_cast<std::int64_t>(table_->pieces.size()) : processor_->GetPieceSize();
}

std::string Vocabulary::piece(std::int32_t id) const {
  const Vocabulary& t = target();
  if (!t.table_) return t.processor_->IdToPiece(id);
  if (id < 0 || id >= t.size()) throw Error(t.name_ + ": id " + std::to_string(id) + " is not in the vocabulary");
  return t.table_->pieces[static_cast<std::size_t>(id)];
}

std::int32_t Vocabulary::piece_id(std::string_view piece) const {
  if (table_) {
    const auto it = ids_->find(std::string(piece));
    return it != ids_->end() ? it->second : -1;
  }
  const int id = processor_->PieceToId(piece);
  return id == processor_->unk_id() && piece != processor_->IdToPiece(id) ? -1 : static_cast<std::int32_t>(id);
}

float Vocabulary::score(std::int32_t id) const {
  const Vocabulary& t = target();
  return t.table_ ? 0.0f : t.processor_->GetScore(id);
}

std::vector<std::int32_t> Vocabulary::encode_side(std::string_view text, bool add_eos) const {
  if (table_) return encode_table(text, add_eos).ids;
  std::vector<int> ids;
  const sentencepiece::util::Status status = processor_->Encode(text, &ids);
  if (!status.ok()) throw Error(name_ + ": encoding failed: " + status.ToString());
  return {ids.begin(), ids.end()};
}

std::vector<std::int32_t> Vocabulary::encode(std::string_view text) const {
  return encode_side(text, table_ && table_->append_eos);
}

std::vector<std::int32_t> Vocabulary::encode_target(std::string_view text) const {
  return target().encode_side(text, false);
}

namespace {

// A piece's span as SentencePiece reports it, checked: a malformed model can make SentencePiece
// report spans past its own text (found by fuzzing).
std::pair<std::size_t, std::size_t> checked_span(std::size_t begin, std::size_t end, std::size_t size,
                                                 const std::string& name, const char* what) {
  if (begin > end || end > size) {
    throw Error(name + ": " + what + " gave a piece at bytes " + std::to_string(begin) + "-" + std::to_string(end) +
                " of a " + std::to_string(size) + "-byte text: a malformed vocabulary");
  }
  return {begin, end};
}

}  // namespace

Vocabulary::Spans Vocabulary::encode_table(std::string_view text, bool add_eos) const {
  Spans out;
  // A leading target-language token of multilingual models (">>fra<< ..."), as MarianTokenizer
  // splits it off: one id (unk_id if the table lacks it), and the rest of the text cut as usual.
  std::size_t code = 0;
  const std::size_t close = text.size() > 3 ? text.find("<<", 3) : std::string_view::npos;  // >>.+?<<
  if (text.substr(0, 2) == ">>" && close != std::string_view::npos) {
    code = close + 2;
    out.ids.push_back(table_id(text.substr(0, code)));
    out.spans.emplace_back(0, code);
  }
  const std::string_view rest = text.substr(code);
  const sentencepiece::ImmutableSentencePieceText proto = processor_->EncodeAsImmutableProto(rest);
  for (const auto& piece : proto.pieces()) {
    const auto span = checked_span(piece.begin(), piece.end(), rest.size(), name_, "encoding");
    out.spans.emplace_back(code + span.first, code + span.second);
    out.ids.push_back(table_id(piece.piece()));
  }
  if (add_eos) {
    out.ids.push_back(table_->eos_id);
    out.spans.emplace_back(text.size(), text.size());
  }
  return out;
}

Vocabulary::Spans Vocabulary::encode_with_spans(std::string_view text) const {
  if (table_) return encode_table(text, table_->append_eos);
  const sentencepiece::ImmutableSentencePieceText proto = processor_->EncodeAsImmutableProto(text);
  Spans out;
  for (const auto& piece : proto.pieces()) {
    out.spans.push_back(checked_span(piece.begin(), piece.end(), text.size(), name_, "encoding"));
    out.ids.push_back(static_cast<std::int32_t>(piece.id()));
  }
  return out;
}

std::string Vocabulary::decode(const std::vector<std::int32_t>& ids) const {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  if (target().table_) return decode_with_spans(ids, spans);
  std::string text;
  const sentencepiece::util::Status status =
      target().processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  if (!status.ok()) throw Error(target().name_ + ": decoding failed: " + status.ToString());
  return text;
}

std::string Vocabulary::decode_with_spans(const std::vector<std::int32_t>& ids,
                                          std::vector<std::pair<std::size_t, std::size_t>>& spans) const {
  const Vocabulary& t = target();
  spans.clear();
  if (t.table_) {
    // The table's pieces, the special ids left out (0-length spans where they stand).
    std::vector<std::string> pieces;
    std::vector<bool> kept;
    for (const std::int32_t id : ids) {
      const bool special = std::find(t.table_->special.begin(), t.table_->special.end(), id) != t.table_->special.end();
      kept.push_back(!special);
      if (!special) pieces.push_back(piece(id));
    }
    const sentencepiece::ImmutableSentencePieceText proto = t.processor_->DecodePiecesAsImmutableProto(pieces);
    if (proto.pieces_size() != pieces.size()) {
      throw Error(t.name_ + ": decoding gave " + std::to_string(proto.pieces_size()) + " pieces for " +
                  std::to_string(pieces.size()));
    }
    // As MarianMT's tokenizer: no space before or after the text (a last piece "▁" decodes to one).
    const std::string& full = proto.text();
    const std::size_t first = std::min(full.find_first_not_of(' '), full.size());
    const std::size_t last = full.find_last_not_of(' ') + 1;  // 0 when all spaces
    const std::string text = last > first ? full.substr(first, last - first) : std::string();
    const auto clamp = [&](std::size_t at) { return std::min(std::max(at, first), std::max(last, first)) - first; };
    std::size_t next = 0, at = 0;
    for (const bool k : kept) {
      if (!k) {
        spans.emplace_back(at, at);
        continue;
      }
      const auto& piece = proto.pieces(static_cast<int>(next++));
      const auto span = checked_span(piece.begin(), piece.end(), full.size(), t.name_, "decoding");
      spans.emplace_back(clamp(span.first), clamp(span.second));
      at = spans.back().second;
    }
    return text;
  }
  const sentencepiece::ImmutableSentencePieceText proto =
      t.processor_->DecodeIdsAsImmutableProto(std::vector<int>(ids.begin(), ids.end()));
  if (proto.pieces_size() != ids.size()) {
    throw Error(t.name_ + ": decoding gave " + std::to_string(proto.pieces_size()) + " pieces for " +
                std::to_string(ids.size()) + " ids");
  }
  const std::string& text = proto.text();
  for (const auto& piece : proto.pieces()) {
    spans.push_back(checked_span(piece.begin(), piece.end(), text.size(), t.name_, "decoding"));
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
  io::write_file_atomically(prefix + ".model", bytes_);
  io::write_file_atomically(prefix + ".vocab", listing);
}

}  // namespace dragoman::text
