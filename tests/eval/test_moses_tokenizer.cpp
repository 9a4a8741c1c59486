// The Moses tokenizer and the paper's BLEU against sacremoses 0.1.1 and sacreBLEU 2.5.1
// (fixtures/moses/expected.json, written by tests/eval/gen_moses_fixtures.py), and literal examples
// that say what the rules are.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/utf8.h"
#include "eval/corpus_score.h"
#include "eval/fixtures.h"
#include "eval/moses_tokenizer.h"
#include "eval/paper_bleu.h"

using namespace dragoman;
using namespace dragoman::eval;

TEST_CASE("Moses tokenizer on literal examples", "[moses]") {
  const MosesTokenizer en("en"), de("de"), fr("fr");
  CHECK(en.tokenize_utf8("Hello, world!") == "Hello , world !");
  CHECK(en.tokenize_utf8("It's 5,300 dollars.") == "It &apos;s 5,300 dollars .");
  CHECK(en.tokenize_utf8("don't") == "don &apos;t");
  CHECK(en.tokenize_utf8("Mr. Smith arrived.") == "Mr. Smith arrived .");  // a nonbreaking prefix
  CHECK(en.tokenize_utf8("No. 5 and No. Five") == "No. 5 and No . Five");  // "#NUMERIC_ONLY#"
  CHECK(en.tokenize_utf8("Wait... what") == "Wait ... what");
  CHECK(en.tokenize_utf8("rich-text") == "rich-text");
  CHECK(en.tokenize_utf8("rich-text", true) == "rich @-@ text");
  CHECK(en.tokenize_utf8("a <b> & \"c\"") == "a &lt; b &gt; &amp; &quot; c &quot;");
  CHECK(en.tokenize_utf8("a <b>", false, false) == "a < b >");
  CHECK(de.tokenize_utf8("z.B. am 3. Oktober.") == "z.B. am 3. Oktober .");
  CHECK(de.tokenize_utf8("„Ja“, sagte er.") == "„ Ja “ , sagte er .");
  CHECK(fr.tokenize_utf8("L'homme qu'il voit.") == "L&apos; homme qu&apos; il voit .");
  CHECK(MosesTokenizer("xx").tokenize_utf8("it's Mr. X") == "it &apos; s Mr. X");  // English prefixes
  CHECK(MosesTokenizer::has_prefixes("de"));
  CHECK(!MosesTokenizer::has_prefixes("xx"));
}

TEST_CASE("compound splitting as tensor2tensor's get_ende_bleu.sh", "[moses]") {
  const auto split = [](const std::string& s) { return utf8::encode(split_compounds(utf8::decode(s))); };
  CHECK(split("rich-text format") == "rich ##AT##-##AT## text format");
  CHECK(split("a-b-c") == "a ##AT##-##AT## b-c");  // Perl's matches do not overlap
  CHECK(split("- a -b c- -") == "- a -b c- -");
  const nlohmann::json fixture = test::read_json_fixture("moses/expected.json");
  for (const auto& c : fixture.at("compounds")) {
    INFO("input: " << c.at("input").get<std::string>());
    CHECK(split(c.at("input").get<std::string>()) == c.at("output").get<std::string>());
  }
}

TEST_CASE("the Moses tokenizer equals sacremoses on the fixture strings", "[moses]") {
  const nlohmann::json fixture = test::read_json_fixture("moses/expected.json");
  const auto& cases = fixture.at("tokenize");
  CHECK(cases.size() >= 1300);
  std::size_t aggressive = 0, unescaped = 0;
  for (const auto& c : cases) {
    const std::string lang = c.at("lang").get<std::string>(), input = c.at("input").get<std::string>();
    const bool dashes = c.at("aggressive").get<bool>(), escape = c.at("escape").get<bool>();
    aggressive += dashes;
    unescaped += !escape;
    INFO("lang " << lang << (dashes ? ", aggressive" : "") << (escape ? "" : ", no escaping") << ", input: " << input);
    CHECK(MosesTokenizer(lang).tokenize_utf8(input, dashes, escape) == c.at("output").get<std::string>());
  }
  CHECK(aggressive >= 100);
  CHECK(unescaped >= 50);
}

TEST_CASE("the paper's BLEU equals sacremoses then sacreBLEU with --tokenize none", "[moses][bleu]") {
  const nlohmann::json fixture = test::read_json_fixture("moses/expected.json");
  for (const auto& c : fixture.at("paper_bleu")) {
    PaperBleuOptions o;
    o.lang = c.at("lang").get<std::string>();
    o.split_compounds = c.at("split_compounds").get<bool>();
    o.aggressive_dash_splits = c.at("aggressive").get<bool>();
    INFO(o.lang << (o.split_compounds ? ", compounds split" : "") << (o.aggressive_dash_splits ? ", -a" : ""));
    const io::TextLines hyp = io::read_text_lines(test::fixture_path("bleu/" + c.at("hyp").get<std::string>()));
    const io::TextLines ref = io::read_text_lines(test::fixture_path("bleu/" + c.at("ref").get<std::string>()));
    Corpus corpus;
    corpus.hyps = hyp.lines;
    corpus.refs.push_back(ref.lines);
    const PaperBleu metric(o);
    for (const int threads : {1, 3}) {
      const MetricResult r = corpus_score(metric, corpus, threads);
      CHECK(test::close_to(r.score, c.at("score").get<double>()));
      CHECK(r.details.at("counts").get<std::vector<double>>() == c.at("counts").get<std::vector<double>>());
      CHECK(r.details.at("totals").get<std::vector<double>>() == c.at("totals").get<std::vector<double>>());
      CHECK(r.details.at("hyp_len").get<std::int64_t>() == c.at("sys_len").get<std::int64_t>());
      CHECK(r.details.at("ref_len").get<std::int64_t>() == c.at("ref_len").get<std::int64_t>());
      const std::string tok =
          "tok:moses-" + o.lang + (o.aggressive_dash_splits ? "-a" : "") + (o.split_compounds ? "+atat" : "");
      CHECK(r.signature.find(tok + "|smooth:none|version:multi-bleu+dragoman") != std::string::npos);
      CHECK(r.signature.find(kSignatureVersion) == std::string::npos);  // not sacreBLEU's computation
    }
  }
}

namespace dragoman::eval {
namespace {

TEST_CASE("the paper's BLEU for German is tensor2tensor's get_ende_bleu.sh step for step", "[moses][bleu]") {
  const nlohmann::json fixture = test::read_json_fixture("moses/expected.json");
  REQUIRE(fixture.at("get_ende_bleu").size() == 2);
  for (const auto& c : fixture.at("get_ende_bleu")) {
    INFO(c.at("hyp").get<std::string>());
    const io::TextLines hyp = io::read_text_lines(test::fixture_path("bleu/" + c.at("hyp").get<std::string>()));
    const io::TextLines ref = io::read_text_lines(test::fixture_path("bleu/" + c.at("ref").get<std::string>()));
    // The normalisation alone: replace-unicode-punctuation.perl as the script runs it, „ as ".
    const auto normalized = c.at("normalized_hyp").get<std::vector<std::string>>();
    REQUIRE(normalized.size() == hyp.lines.size());
    for (std::size_t i = 0; i < normalized.size(); ++i) {
      CHECK(utf8::encode(normalize_t2t_punctuation(utf8::decode(hyp.lines[i]))) == normalized[i]);
    }
    Corpus corpus;
    corpus.hyps = hyp.lines;
    corpus.refs.push_back(ref.lines);
    PaperBleuOptions o;
    o.lang = "de";
    o.normalize_punctuation = true;
    const MetricResult r = corpus_score(PaperBleu(o), corpus, 2);
    CHECK(test::close_to(r.score, c.at("score").get<double>()));
    CHECK(r.details.at("counts").get<std::vector<double>>() == c.at("counts").get<std::vector<double>>());
    CHECK(r.details.at("totals").get<std::vector<double>>() == c.at("totals").get<std::vector<double>>());
    CHECK(r.details.at("hyp_len").get<std::int64_t>() == c.at("sys_len").get<std::int64_t>());
    CHECK(r.details.at("ref_len").get<std::int64_t>() == c.at("ref_len").get<std::int64_t>());
    CHECK(r.signature.find("tok:moses-de+norm+atat|smooth:none|version:multi-bleu+dragoman") != std::string::npos);
    // Without the normalisation the fixture's quotes and fullwidth punctuation cost points.
    o.normalize_punctuation = false;
    if (c.at("hyp") == "t2t.hyp") CHECK(corpus_score(PaperBleu(o), corpus, 2).score < r.score - 5);
  }
  // What the script's Perl does with spaces after an ideographic full stop, and its fullwidth 1.
  CHECK(utf8::encode(normalize_t2t_punctuation(utf8::decode("a。   b．c１„d“"))) == "a. b. c\"\"d\"");
}

}  // namespace
}  // namespace dragoman::eval
