// translate's output formats (decode/translation_output.h) against hand-made expectations: a
// hypothesis "c b a" of "a b c" with chosen scores and attention through the letters vocabulary of
// the reversal tests, in every text layout and as JSON, an empty line, an n-best list, and a cut
// source.
#include <catch2/catch.hpp>

#include "decode/translation_output.h"
#include "train/train_testing.h"

namespace dragoman::decode {
namespace {

struct Example {
  text::Vocabulary vocabulary =
      text::Vocabulary::load(test::write_letters_vocabulary(test::scratch_dir("output-formats")));
  SourceWords source = source_words("a b  c", vocabulary);
  Translation translation;

  Example() {
    TranslatedHypothesis h;
    h.tokens = vocabulary.encode("c b a");
    h.text = vocabulary.decode(h.tokens);
    h.token_log_probs = {-0.5, -0.25, -0.125, -1.0};  // c, b, a, EOS
    h.log_prob = -1.875;
    h.score = -0.4;
    // Attention over the source pieces a, b, c: c looks at c, b at b, a at a (mostly); EOS anywhere.
    h.attention = {{0.125f, 0.125f, 0.75f}, {0.25f, 0.5f, 0.25f}, {0.5f, 0.25f, 0.25f}, {1.0f, 0.0f, 0.0f}};
    translation.nbest = {h};
    translation.source_tokens = 3;
  }
};

}  // namespace

TEST_CASE("translate's text formats, with word scores and alignments appended", "[decode]") {
  const Example e;
  REQUIRE(e.translation.nbest.front().tokens.size() == 3);
  REQUIRE(e.source.words == std::vector<std::string>{"a", "b", "c"});
  REQUIRE(e.source.piece_words == std::vector<std::int64_t>{0, 1, 2});
  OutputOptions o;
  CHECK(format_text(e.translation, 0, o, e.vocabulary, &e.source) == "c b a\n");
  o.scores = true;
  CHECK(format_text(e.translation, 0, o, e.vocabulary, &e.source) == "-0.400000\tc b a\n");
  o.scores = false;
  o.word_scores = true;
  o.alignment = AlignmentKind::kHard;
  CHECK(format_text(e.translation, 0, o, e.vocabulary, &e.source) ==
        "c b a ||| 2-0 1-1 0-2 ||| WordScores= -0.500000 -0.250000 -0.125000 -1.000000\n");
  o.word_scores = false;
  o.alignment = AlignmentKind::kSoft;
  CHECK(format_text(e.translation, 0, o, e.vocabulary, &e.source) ==
        "c b a ||| 0.1250,0.1250,0.7500 0.2500,0.5000,0.2500 0.5000,0.2500,0.2500\n");
  o.alignment = AlignmentKind::kHard;
  o.nbest = 1;
  CHECK(format_text(e.translation, 7, o, e.vocabulary, &e.source) ==
        "7 ||| c b a ||| F0= -1.875000 ||| -0.400000 ||| 2-0 1-1 0-2\n");
}

TEST_CASE("translate's JSON objects", "[decode]") {
  Example e;
  OutputOptions o;
  o.format = OutputFormat::kJson;
  CHECK(translation_json(e.translation, o, e.vocabulary, &e.source).dump() ==
        R"({"translation":"c b a","log_prob":-1.875,"score":-0.4})");
  o.word_scores = true;
  o.alignment = AlignmentKind::kHard;
  o.nbest = 1;
  e.translation.truncated = true;
  CHECK(translation_json(e.translation, o, e.vocabulary, &e.source).dump() ==
        R"({"translation":"c b a","log_prob":-1.875,"score":-0.4,"words":["c","b","a"],)"
        R"("word_scores":[-0.5,-0.25,-0.125,-1.0],"pieces":["▁c","▁b","▁a","</s>"],"piece_words":[0,1,2,-1],)"
        R"("piece_scores":[-0.5,-0.25,-0.125,-1.0],"eos_score":-1.0,"alignment":[[2,0],[1,1],[0,2]],)"
        R"("source_words":["a","b","c"],"nbest":[{"translation":"c b a","log_prob":-1.875,"score":-0.4,)"
        R"("words":["c","b","a"],"word_scores":[-0.5,-0.25,-0.125,-1.0],"pieces":["▁c","▁b","▁a","</s>"],)"
        R"("piece_words":[0,1,2,-1],"piece_scores":[-0.5,-0.25,-0.125,-1.0],"eos_score":-1.0,)"
        R"("alignment":[[2,0],[1,1],[0,2]]}],"truncated":true})");
  o.nbest = 0;
  o.alignment = AlignmentKind::kSoft;
  o.word_scores = false;
  e.translation.truncated = false;
  CHECK(translation_json(e.translation, o, e.vocabulary, &e.source).dump() ==
        R"({"translation":"c b a","log_prob":-1.875,"score":-0.4,"words":["c","b","a"],)"
        R"("alignment":[[0.125,0.125,0.75],[0.25,0.5,0.25],[0.5,0.25,0.25]],"source_words":["a","b","c"]})");
  // An empty line: no pieces, no words, no EOS (the model did not run), log-probability 0.
  Translation empty;
  empty.nbest.emplace_back();
  o.word_scores = true;
  o.alignment = AlignmentKind::kHard;
  const SourceWords none = source_words("", e.vocabulary);
  CHECK(translation_json(empty, o, e.vocabulary, &none).dump() ==
        R"({"translation":"","log_prob":0.0,"score":0.0,"words":[],"word_scores":[],"pieces":[],"piece_words":[],)"
        R"("piece_scores":[],"eos_score":0.0,"alignment":[],"source_words":[]})");
  CHECK(format_text(empty, 3, o, e.vocabulary, &none) == " |||  ||| WordScores=\n");  // empty fields
}

TEST_CASE("alignments of a cut source give its last words nothing", "[decode]") {
  Example e;
  // Only the first two source pieces were read (the line was cut to the model's positions).
  for (auto& row : e.translation.nbest.front().attention) row.resize(2);
  const WordLevel w = word_level(e.translation.nbest.front(), e.vocabulary, &e.source);
  REQUIRE(w.attention.size() == 3);
  for (const auto& row : w.attention) {
    REQUIRE(row.size() == 3);
    CHECK(row[2] == 0.0f);
  }
}

}  // namespace dragoman::decode
