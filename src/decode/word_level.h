// From pieces to words (translate's --word-scores, --alignment and attention pictures): the words
// of a text are its runs of non-whitespace bytes (ASCII space, tab, and the other ASCII
// whitespace), as a user splitting the line on whitespace sees them. Each SentencePiece piece
// belongs to one word:
//   the word that holds the piece's first non-whitespace byte; a piece of whitespace alone (or
//   with no bytes of its own: SentencePiece's "▁" before punctuation, a byte piece after the first
//   of its character) belongs to the next word that starts at or after it, or to the last word
//   when none does.
// So every piece of a non-empty text has a word, and a word's score (the sum of its pieces'
// log-probabilities) and alignment take all its pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dragoman::decode {

// The words of `text` as byte spans [begin, end).
std::vector<std::pair<std::size_t, std::size_t>> word_spans(std::string_view text);
// The words themselves.
std::vector<std::string> split_words(std::string_view text);

// Each piece's word (0-based), from the pieces' byte spans in `text`; empty when the text has no
// words (then there are no pieces worth a word either).
std::vector<std::int64_t> piece_words(std::string_view text,
                                      const std::vector<std::pair<std::size_t, std::size_t>>& piece_spans);

// Each word's score: the sum of its pieces' (in piece order). piece_scores may be longer than
// `words` (EOS's score last): the extra entries are left out.
std::vector<double> word_scores(const std::vector<double>& piece_scores, const std::vector<std::int64_t>& words,
                                std::int64_t word_count);

// The cross-attention between words [target words][source words]: a target word's row is the
// average over its pieces of their attention, each piece's attention summed over each source
// word's pieces (so a row sums to 1 like a piece's). `attention` has one row per target piece
// (more rows, such as EOS's, are left out), each over the source pieces. A source piece whose word
// is -1 (an imported model's source </s>) belongs to no word: its attention is left out, and the
// row then sums to less than 1.
std::vector<std::vector<float>> word_attention(const std::vector<std::vector<float>>& attention,
                                               const std::vector<std::int64_t>& target_words,
                                               std::int64_t target_word_count,
                                               const std::vector<std::int64_t>& source_words,
                                               std::int64_t source_word_count);

// Hard alignment: each target word's most attended source word (the first of equals), as
// (source, target) pairs in target order.
std::vector<std::pair<std::int64_t, std::int64_t>> hard_alignment(const std::vector<std::vector<float>>& word_matrix);

// Pharaoh format: "0-0 1-2 ..." (source-target).
std::string pharaoh(const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs);

}  // namespace dragoman::decode
