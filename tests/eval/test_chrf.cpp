// chrF and chrF++ equal sacreBLEU 2.5.1 on every chrF case of fixtures/bleu/expected.json.
#include <catch2/catch.hpp>

#include <cmath>

#include "eval/chrf.h"
#include "eval/corpus_score.h"
#include "eval/fixtures.h"
#include "eval/report.h"

using namespace dragoman;
using namespace dragoman::eval;

namespace {

ChrfOptions chrf_options(const nlohmann::json& o) {
  ChrfOptions c;
  c.char_order = o.at("char_order").get<int>();
  c.word_order = o.at("word_order").get<int>();
  c.beta = o.at("beta").get<int>();
  c.lowercase = o.at("lowercase").get<bool>();
  c.whitespace = o.at("whitespace").get<bool>();
  c.eps_smoothing = o.at("eps_smoothing").get<bool>();
  return c;
}

}  // namespace

TEST_CASE("chrF matches sacreBLEU on every fixture case", "[chrf]") {
  const nlohmann::json cases = test::read_json_fixture("bleu/expected.json");
  std::size_t checked = 0;
  for (const auto& c : cases) {
    if (c.at("metric") != "chrf") continue;
    ++checked;
    INFO("case " << c.at("name").get<std::string>());
    const test::FixtureCorpus l(c);
    const eval::Corpus& corpus = l.corpus;

    const Chrf chrf(chrf_options(c.at("options")));
    const MetricResult r = corpus_score(chrf, corpus, 2);
    CHECK(test::close_to(r.score, c.at("corpus").at("score").get<double>()));
    CHECK(format_results_text({r}, 2, false, false) ==
          test::with_our_version(c.at("corpus").at("text").get<std::string>()) + "\n");

    const std::vector<std::int64_t> per_segment = segment_statistics(chrf, corpus, 1);
    const auto sentence = c.at("sentence").get<std::vector<double>>();
    for (std::size_t i = 0; i < sentence.size(); ++i) {
      INFO("segment " << i + 1);
      CHECK(test::close_to(chrf.f_score(per_segment.data() + i * chrf.stats_size()), sentence[i]));
    }
  }
  CHECK(checked >= 4);
}

TEST_CASE("chrF of identical text is 100 and of disjoint text 0", "[chrf]") {
  const Chrf chrf(ChrfOptions{});
  std::vector<std::int64_t> stats(chrf.stats_size());
  chrf.segment_stats("Das ist gut.", {"Das ist gut."}, stats.data());
  CHECK(chrf.f_score(stats.data()) == Approx(100.0));
  chrf.segment_stats("xyz", {"abc"}, stats.data());
  CHECK(chrf.f_score(stats.data()) == 0.0);
  CHECK(chrf.name() == "chrF2");
  CHECK(Chrf(ChrfOptions{6, 2, 2, false, false, false}).name() == "chrF2++");
}
