// Fixture access and shared test helpers (see fixtures.h).
#include "eval/fixtures.h"

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "base/error.h"
#include "eval/metric.h"

namespace dragoman::test {

// The environment variable DRAGOMAN_TEST_FIXTURES overrides the source tree's path compiled in
// (for test binaries copied to another machine, e.g. by scripts/gpu-bundle.sh).
std::string fixture_path(const std::string& relative) {
  const char* root = std::getenv("DRAGOMAN_TEST_FIXTURES");
  return std::string(root != nullptr && *root != 0 ? root : DRAGOMAN_TEST_FIXTURES) + "/" + relative;
}

nlohmann::json read_json_fixture(const std::string& relative) {
  const std::string path = fixture_path(relative);
  std::ifstream in(path);
  if (!in) throw Error("cannot open fixture " + path);
  return nlohmann::json::parse(in);
}

FixtureCorpus::FixtureCorpus(const nlohmann::json& fixture_case)
    : hyp(io::read_text_lines(fixture_path("bleu/" + fixture_case.at("hyp").get<std::string>()))) {
  for (const auto& r : fixture_case.at("refs")) {
    refs.push_back(io::read_text_lines(fixture_path("bleu/" + r.get<std::string>())));
  }
  corpus.hyps = hyp.lines;
  for (const auto& r : refs) corpus.refs.push_back(r.lines);
}

std::string with_our_version(std::string text) {
  const std::string theirs = std::string("version:") + eval::kSacrebleuVersion;
  const std::size_t at = text.find(theirs);
  if (at != std::string::npos) text.replace(at, theirs.size(), std::string("version:") + eval::kSignatureVersion);
  return text;
}

bool close_to(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

}  // namespace dragoman::test
