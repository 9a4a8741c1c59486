// What translate writes for a translation (and serve will answer): plain text (the translation;
// with --scores "SCORE<TAB>TEXT"; with --nbest Moses' "I ||| TEXT ||| F0= LOG_PROB ||| SCORE"
// lines), with the word scores and alignment appended when asked (Marian's layout:
// " ||| 0-0 1-2" and " ||| WordScores= -0.12 -1.50 -0.03", EOS's last), or one JSON object per input line
// (docs/DECODING.md has the fields).
//
// Word-level fields are over the whitespace words of the detokenised translation and of the input
// line (decode/word_level.h): a word's score sums its pieces' log-probabilities, and the list ends
// with EOS's, so that the word scores add up to the hypothesis's log-probability (as Marian's
// WordScores= do); an alignment is computed from the recorded cross-attention
// (search.record_attention).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "decode/translator.h"
#include "text/vocabulary.h"

namespace dragoman::decode {

enum class OutputFormat { kText, kJson };
enum class AlignmentKind { kNone, kHard, kSoft };

struct OutputOptions {
  OutputFormat format = OutputFormat::kText;
  int nbest = 0;             // > 0: every hypothesis of the n-best list
  bool scores = false;       // text, 1-best: "SCORE<TAB>TEXT"
  bool word_scores = false;  // each word's (and piece's) log-probability
  AlignmentKind alignment = AlignmentKind::kNone;
};

// An input line's words and each of its source pieces' word (for alignments and pictures).
struct SourceWords {
  std::vector<std::string> words;
  std::vector<std::int64_t> piece_words;  // one per source piece (before any truncation)
};
SourceWords source_words(const std::string& line, const text::Vocabulary& vocabulary);

// The piece that stands for EOS in the word-level lists.
inline constexpr const char* kEosPiece = "</s>";

// A hypothesis seen word by word. The piece and score lists end with EOS (kEosPiece, its word -1,
// its log-probability) when the hypothesis has one (every searched hypothesis; not an empty line's).
struct WordLevel {
  std::vector<std::string> pieces;            // the output pieces (SentencePiece's spelling), then </s>
  std::vector<std::string> words;             // the translation's whitespace words (no EOS)
  std::vector<std::int64_t> piece_words;      // each piece's word (-1: EOS)
  std::vector<double> word_scores;            // each word's log-probability (its pieces' sum), then EOS's
  std::vector<std::vector<float>> attention;  // [target words][source words], when attention was recorded
};
// `source` is needed (and used) only when the hypothesis recorded attention.
WordLevel word_level(const TranslatedHypothesis& h, const text::Vocabulary& vocabulary, const SourceWords* source);

// The output lines (each ending in '\n') of the translation of input line `index` (0-based);
// `source` as word_level.
std::string format_text(const Translation& t, std::int64_t index, const OutputOptions& o,
                        const text::Vocabulary& vocabulary, const SourceWords* source);
nlohmann::ordered_json translation_json(const Translation& t, const OutputOptions& o,
                                        const text::Vocabulary& vocabulary, const SourceWords* source);

// A score as translate writes it in text: 6 decimals.
std::string format_score(double score);

}  // namespace dragoman::decode
