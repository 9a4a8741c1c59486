// Fixture access (see fixtures.h).
#include "eval/fixtures.h"

#include <fstream>

#include "core/error.h"

namespace dragoman::test {

std::string fixture_path(const std::string& relative) { return std::string(DRAGOMAN_TEST_FIXTURES) + "/" + relative; }

nlohmann::json read_json_fixture(const std::string& relative) {
  const std::string path = fixture_path(relative);
  std::ifstream in(path);
  if (!in) throw Error("cannot open fixture " + path);
  return nlohmann::json::parse(in);
}

}  // namespace dragoman::test
