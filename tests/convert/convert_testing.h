// What the convert tests share: the fixtures of tests/fixtures/marian, read.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/read_file.h"

namespace dragoman::test {

inline const std::filesystem::path kMarianFixtures = std::filesystem::path(DRAGOMAN_TEST_FIXTURES) / "marian";

inline nlohmann::json read_json_file(const std::filesystem::path& path) {
  const std::vector<char> bytes = io::read_file(path.string());
  return nlohmann::json::parse(bytes.begin(), bytes.end());
}

inline std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace dragoman::test
