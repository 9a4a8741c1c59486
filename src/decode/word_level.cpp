// From pieces to words (see word_level.h).
#include "decode/word_level.h"

#include <algorithm>

#include "base/error.h"

namespace dragoman::decode {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> word_spans(std::string_view text) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    if (i == text.size()) break;
    const std::size_t begin = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    spans.emplace_back(begin, i);
  }
  return spans;
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  for (const auto& [begin, end] : word_spans(text)) words.emplace_back(text.substr(begin, end - begin));
  return words;
}

std::vector<std::int64_t> piece_words(std::string_view text,
                                      const std::vector<std::pair<std::size_t, std::size_t>>& piece_spans) {
  const std::vector<std::pair<std::size_t, std::size_t>> words = word_spans(text);
  if (words.empty()) return {};
  std::vector<std::int64_t> out;
  out.reserve(piece_spans.size());
  for (const auto& [begin, end] : piece_spans) {
    if (begin > end || end > text.size()) throw Error("piece_words: a piece's span is outside the text");
    std::size_t at = begin;
    while (at < end && is_space(text[at])) ++at;
    // The first word that ends after `at` holds it or starts after it.
    const auto word = std::find_if(words.begin(), words.end(), [&](const auto& w) { return w.second > at; });
    out.push_back(word == words.end() ? static_cast<std::int64_t>(words.size()) - 1 : word - words.begin());
  }
  return out;
}

std::vector<double> word_scores(const std::vector<double>& piece_scores, const std::vector<std::int64_t>& words,
                                std::int64_t word_count) {
  if (piece_scores.size() < words.size()) throw Error("word_scores: fewer scores than pieces");
  std::vector<double> scores(static_cast<std::size_t>(word_count), 0.0);
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] < 0 || words[i] >= word_count) throw Error("word_scores: a piece's word is out of range");
    scores[static_cast<std::size_t>(words[i])] += piece_scores[i];
  }
  return scores;
}

std::vector<std::vector<float>> word_attention(const std::vector<std::vector<float>>& attention,
                                               const std::vector<std::int64_t>& target_words,
                                               std::int64_t target_word_count,
                                               const std::vector<std::int64_t>& source_words,
                                               std::int64_t source_word_count) {
  if (attention.size() < target_words.size()) throw Error("word_attention: fewer attention rows than pieces");
  std::vector<std::vector<double>> sums(static_cast<std::size_t>(target_word_count),
                                        std::vector<double>(static_cast<std::size_t>(source_word_count), 0.0));
  std::vector<std::int64_t> pieces(static_cast<std::size_t>(target_word_count), 0);
  for (std::size_t i = 0; i < target_words.size(); ++i) {
    const std::int64_t t = target_words[i];
    if (t < 0 || t >= target_word_count) throw Error("word_attention: a target piece's word is out of range");
    const std::vector<float>& row = attention[i];
    if (row.size() != source_words.size()) throw Error("word_attention: an attention row is not over the source");
    ++pieces[static_cast<std::size_t>(t)];
    for (std::size_t j = 0; j < row.size(); ++j) {
      const std::int64_t s = source_words[j];
      if (s == -1) continue;  // a piece of no word: the </s> an imported model's source ends with
      if (s < 0 || s >= source_word_count) throw Error("word_attention: a source piece's word is out of range");
      sums[static_cast<std::size_t>(t)][static_cast<std::size_t>(s)] += static_cast<double>(row[j]);
    }
  }
  std::vector<std::vector<float>> matrix(sums.size());
  for (std::size_t t = 0; t < sums.size(); ++t) {
    const double n = static_cast<double>(std::max<std::int64_t>(pieces[t], 1));
    for (const double value : sums[t]) matrix[t].push_back(static_cast<float>(value / n));
  }
  return matrix;
}

std::vector<std::pair<std::int64_t, std::int64_t>> hard_alignment(const std::vector<std::vector<float>>& word_matrix) {
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  for (std::size_t t = 0; t < word_matrix.size(); ++t) {
    const std::vector<float>& row = word_matrix[t];
    if (row.empty()) continue;
    const auto best = std::max_element(row.begin(), row.end());  // the first of equals
    pairs.emplace_back(best - row.begin(), static_cast<std::int64_t>(t));
  }
  return pairs;
}

std::string pharaoh(const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs) {
  std::string out;
  for (const auto& [source, target] : pairs) {
    if (!out.empty()) out += ' ';
    out += std::to_string(source) + "-" + std::to_string(target);
  }
  return out;
}

}  // namespace dragoman::decode
