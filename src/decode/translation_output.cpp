// translate's output formats (see translation_output.h).
#include "decode/translation_output.h"

#include <cstdio>

#include "base/error.h"
#include "decode/word_level.h"

namespace dragoman::decode {
namespace {

// Soft alignment as Marian writes it: target words separated by spaces, each a comma-separated
// row over the source words.
std::string soft_text(const std::vector<std::vector<float>>& matrix) {
  std::string out;
  for (std::size_t t = 0; t < matrix.size(); ++t) {
    if (t > 0) out += ' ';
    for (std::size_t s = 0; s < matrix[t].size(); ++s) {
      char value[32];
      std::snprintf(value, sizeof value, "%.4f", static_cast<double>(matrix[t][s]));
      if (s > 0) out += ',';
      out += value;
    }
  }
  return out;
}

// " ||| ALIGNMENT ||| WordScores= ..." as asked.
std::string text_extras(const TranslatedHypothesis& h, const OutputOptions& o, const text::Vocabulary& vocabulary,
                        const SourceWords* source) {
  if (o.alignment == AlignmentKind::kNone && !o.word_scores) return {};
  const WordLevel w = word_level(h, vocabulary, source);
  std::string out;
  if (o.alignment == AlignmentKind::kHard) out += " ||| " + pharaoh(hard_alignment(w.attention));
  if (o.alignment == AlignmentKind::kSoft) out += " ||| " + soft_text(w.attention);
  if (o.word_scores) {
    out += " ||| WordScores=";
    for (const double score : w.word_scores) out += " " + format_score(score);
  }
  return out;
}

nlohmann::ordered_json hypothesis_json(const TranslatedHypothesis& h, const OutputOptions& o,
                                       const text::Vocabulary& vocabulary, const SourceWords* source) {
  nlohmann::ordered_json j = {{"translation", h.text}, {"log_prob", h.log_prob}, {"score", h.score}};
  if (o.alignment == AlignmentKind::kNone && !o.word_scores) return j;
  const WordLevel w = word_level(h, vocabulary, source);
  j["words"] = w.words;
  if (o.word_scores) {
    j["word_scores"] = w.word_scores;
    j["pieces"] = w.pieces;
    j["piece_words"] = w.piece_words;
    // The pieces' log-probabilities, then EOS's: in this order they add up to log_prob bit for bit.
    j["piece_scores"] = h.token_log_probs;
    j["eos_score"] = h.token_log_probs.size() > h.tokens.size() ? h.token_log_probs.back() : 0.0;
  }
  // Both as arrays (the text format's Pharaoh string is for Marian's tools): hard, [source, target]
  // word pairs in target order; soft, one row of weights over the source words per target word.
  if (o.alignment == AlignmentKind::kHard) {
    j["alignment"] = hard_alignment(w.attention);
  } else if (o.alignment == AlignmentKind::kSoft) {
    j["alignment"] = w.attention;
  }
  return j;
}

}  // namespace

std::string format_score(double score) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", score);
  return text;
}

SourceWords source_words(const std::string& line, const text::Vocabulary& vocabulary) {
  const text::Vocabulary::Spans pieces = vocabulary.encode_with_spans(line);
  SourceWords out;
  out.words = split_words(line);
  out.piece_words = piece_words(line, pieces.spans);
  // The </s> an imported model's vocabulary ends the source with is no word: its attention (Marian
  // models put much of it there) is left out of the words' (word_attention).
  if (vocabulary.table() != nullptr && vocabulary.table()->append_eos && !out.piece_words.empty()) {
    out.piece_words.back() = -1;
  }
  return out;
}

WordLevel word_level(const TranslatedHypothesis& h, const text::Vocabulary& vocabulary, const SourceWords* source) {
  WordLevel w;
  for (const std::int32_t id : h.tokens) w.pieces.push_back(vocabulary.piece(id));
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  const std::string text = vocabulary.decode_with_spans(h.tokens, spans);
  w.words = split_words(text);
  w.piece_words = piece_words(text, spans);
  const auto word_count = static_cast<std::int64_t>(w.words.size());
  if (w.piece_words.empty()) w.piece_words.assign(h.tokens.size(), -1);  // pieces without a word: none scored
  if (word_count > 0) w.word_scores = word_scores(h.token_log_probs, w.piece_words, word_count);
  if (!h.attention.empty() && word_count > 0) {
    if (source == nullptr) throw Error("word_level: the hypothesis's attention needs its source's words");
    const std::size_t source_pieces = h.attention.front().size();  // after truncation
    if (source_pieces > source->piece_words.size()) throw Error("word_level: attention over more source pieces");
    const std::vector<std::int64_t> kept(source->piece_words.begin(),
                                         source->piece_words.begin() + static_cast<std::ptrdiff_t>(source_pieces));
    w.attention =
        word_attention(h.attention, w.piece_words, word_count, kept, static_cast<std::int64_t>(source->words.size()));
  }
  // EOS's log-probability closes both lists (Marian's WordScores= do the same): each list then
  // adds up to the hypothesis's log-probability.
  if (h.token_log_probs.size() > h.tokens.size()) {
    w.pieces.push_back(kEosPiece);
    w.piece_words.push_back(-1);
    w.word_scores.push_back(h.token_log_probs.back());
  }
  return w;
}

std::string format_text(const Translation& t, std::int64_t index, const OutputOptions& o,
                        const text::Vocabulary& vocabulary, const SourceWords* source) {
  std::string out;
  if (o.nbest > 0) {
    for (const TranslatedHypothesis& h : t.nbest) {
      out += std::to_string(index) + " ||| " + h.text + " ||| F0= " + format_score(h.log_prob) + " ||| " +
             format_score(h.score) + text_extras(h, o, vocabulary, source) + "\n";
    }
    return out;
  }
  const TranslatedHypothesis& best = t.nbest.front();
  if (o.scores) out += format_score(best.score) + "\t";
  return out + best.text + text_extras(best, o, vocabulary, source) + "\n";
}

nlohmann::ordered_json translation_json(const Translation& t, const OutputOptions& o,
                                        const text::Vocabulary& vocabulary, const SourceWords* source) {
  nlohmann::ordered_json j = hypothesis_json(t.nbest.front(), o, vocabulary, source);
  if (o.alignment != AlignmentKind::kNone && source != nullptr) j["source_words"] = source->words;
  if (o.nbest > 0) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const TranslatedHypothesis& h : t.nbest) list.push_back(hypothesis_json(h, o, vocabulary, source));
    j["nbest"] = std::move(list);
  }
  if (t.truncated) j["truncated"] = true;
  return j;
}

}  // namespace dragoman::decode
