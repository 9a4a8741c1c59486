// From pieces to words (decode/word_level.h), against hand-made expectations: words of a text,
// each piece's word (spaces, "▁" alone, pieces without bytes, multi-byte characters), word scores,
// word attention and hard alignments, Pharaoh format; the attention pictures' XML (escaping, one
// cell per word pair); and SentencePiece's spans through a trained vocabulary.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

#include "base/error.h"
#include "decode/attention_svg.h"
#include "decode/word_level.h"
#include "text/vocabulary.h"

namespace dragoman::decode {

using Spans = std::vector<std::pair<std::size_t, std::size_t>>;

TEST_CASE("words are the runs of non-whitespace", "[decode]") {
  CHECK(split_words("  Das ist\tein  Test. ") == std::vector<std::string>{"Das", "ist", "ein", "Test."});
  CHECK(split_words("") == std::vector<std::string>{});
  CHECK(split_words("   ") == std::vector<std::string>{});
  CHECK(word_spans("ab  c") == Spans{{0, 2}, {4, 5}});
}

TEST_CASE("each piece belongs to the word of its first non-space byte, or the next word", "[decode]") {
  // "Das Haus ist größer ." as pieces "Das" " Ha" "us" " ist" " " "gr" "ö" "ßer" " " "." and a
  // piece with no bytes of its own after the last.
  const std::string text = "Das Haus ist größer .";
  const Spans pieces = {{0, 3},   {3, 6},   {6, 8},   {8, 12},  {12, 13}, {13, 15},
                        {15, 17}, {17, 21}, {21, 22}, {22, 23}, {23, 23}};
  CHECK(piece_words(text, pieces) == std::vector<std::int64_t>{0, 1, 1, 2, 3, 3, 3, 3, 4, 4, 4});
  CHECK(piece_words("", {}) == std::vector<std::int64_t>{});
  CHECK_THROWS_AS(piece_words("ab", {{0, 3}}), Error);
}

TEST_CASE("word scores sum their pieces' log-probabilities, leaving EOS's out", "[decode]") {
  const std::vector<double> piece_scores = {-0.5, -0.25, -1.0, -2.0, -0.125};  // 4 pieces, then EOS
  const std::vector<std::int64_t> words = {0, 0, 1, 2};
  const std::vector<double> scores = word_scores(piece_scores, words, 3);
  CHECK(scores == std::vector<double>{-0.75, -1.0, -2.0});
  CHECK_THROWS_AS(word_scores(piece_scores, {0, 5}, 3), Error);
}

TEST_CASE("word attention averages a word's pieces and sums a source word's, and hard alignment takes the largest",
          "[decode]") {
  // Target pieces: t0 t1 (word 0), t2 (word 1), then EOS's row. Source pieces: s0 s1 (word 0), s2 (word 1).
  const std::vector<std::vector<float>> attention = {
      {0.5f, 0.25f, 0.25f}, {0.25f, 0.25f, 0.5f}, {0.0f, 0.125f, 0.875f}, {1.0f, 0.0f, 0.0f}};
  const std::vector<std::vector<float>> matrix = word_attention(attention, {0, 0, 1}, 2, {0, 0, 1}, 2);
  REQUIRE(matrix.size() == 2);
  CHECK(matrix[0] == std::vector<float>{0.625f, 0.375f});
  CHECK(matrix[1] == std::vector<float>{0.125f, 0.875f});
  const auto pairs = hard_alignment(matrix);
  CHECK(pairs == std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 0}, {1, 1}});
  CHECK(pharaoh(pairs) == "0-0 1-1");
  CHECK(pharaoh({{2, 0}, {0, 1}, {1, 2}}) == "2-0 0-1 1-2");
  CHECK(pharaoh({}).empty());
  // Equal weights: the first source word.
  CHECK(hard_alignment({{0.5f, 0.5f}}) == std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 0}});
  CHECK_THROWS_AS(word_attention(attention, {0, 0, 1}, 2, {0, 1}, 2), Error);  // rows not over the source
  // A source piece of no word (-1: an imported model's source </s>) is left out of every row, so
  // that much attention on it does not align everything with the last word.
  const std::vector<std::vector<float>> with_eos = word_attention(attention, {0, 0, 1}, 2, {0, 1, -1}, 2);
  CHECK(with_eos[0] == std::vector<float>{0.375f, 0.25f});
  CHECK(with_eos[1] == std::vector<float>{0.0f, 0.125f});
  CHECK(hard_alignment(with_eos) == std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 0}, {1, 1}});
  CHECK_THROWS_AS(word_attention(attention, {0, 0, 1}, 2, {0, 1, -2}, 2), Error);
}

TEST_CASE("attention pictures are well-formed SVG with one cell per word pair", "[decode]") {
  const std::vector<std::string> source = {"A", "<b>", "\"c\"&", std::string("d\x01")};
  const std::vector<std::string> target = {"x", "y'", "z"};
  std::vector<std::vector<float>> matrix(3, std::vector<float>(4, 0.25f));
  matrix[1][2] = 1.5f;  // clamped to 1
  const std::string svg = attention_svg(source, target, matrix, "line 1: <test>");
  const std::regex cell("<rect class=\"cell\"");
  CHECK(std::distance(std::sregex_iterator(svg.begin(), svg.end(), cell), std::sregex_iterator()) == 12);
  CHECK(svg.find("&lt;b&gt;") != std::string::npos);
  CHECK(svg.find("&quot;c&quot;&amp;") != std::string::npos);
  CHECK(svg.find("y&apos;") != std::string::npos);
  CHECK(svg.find('\x01') == std::string::npos);
  CHECK(svg.find("fill-opacity=\"1.0000\"") != std::string::npos);
  CHECK(svg.find("line 1: &lt;test&gt;") != std::string::npos);
  CHECK(xml_escape("a\xEF\xBF\xBE"
                   "b") ==
        "a\xEF\xBF\xBD"
        "b");  // U+FFFE is not an XML character
  CHECK_THROWS_AS(attention_svg(source, target, {{0.1f}}, ""), Error);
}

TEST_CASE("SentencePiece spans map a vocabulary's pieces to the words of the input and the output", "[decode]") {
  // A small vocabulary trained on a few sentences.
  const std::string dir = "vocabulary-spans-test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream text(dir + "/text.txt");
    for (int i = 0; i < 50; ++i) text << "the house is bigger than the garden, said Mr. Müller " << i << "\n";
  }
  text::VocabularyOptions options;
  options.inputs = {dir + "/text.txt"};
  options.vocab_size = 60;
  const text::Vocabulary vocabulary = text::Vocabulary::train(options);
  const std::string line = "  the  gardens, Müller.";
  const text::Vocabulary::Spans encoded = vocabulary.encode_with_spans(line);
  CHECK(encoded.ids == vocabulary.encode(line));
  const std::vector<std::int64_t> words = piece_words(line, encoded.spans);
  REQUIRE(words.size() == encoded.ids.size());
  CHECK(words.front() == 0);
  CHECK(words.back() == 2);
  for (std::size_t i = 1; i < words.size(); ++i) CHECK(words[i] >= words[i - 1]);
  Spans decoded_spans;
  const std::string decoded = vocabulary.decode_with_spans(encoded.ids, decoded_spans);
  CHECK(decoded == vocabulary.decode(encoded.ids));
  CHECK(decoded == "the gardens, Müller.");
  CHECK(piece_words(decoded, decoded_spans) == words);
  std::filesystem::remove_all(dir);
}

}  // namespace dragoman::decode
