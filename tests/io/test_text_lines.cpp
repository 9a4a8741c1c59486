// Line reading: '\n' only, last line without newline, invalid UTF-8 named by file and line.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "io/text_lines.h"

using namespace dragoman;
using namespace dragoman::io;

TEST_CASE("text lines split on newline only", "[io]") {
  const TextLines t = text_lines_from_bytes("mem", "a\r\nb\n\nc");
  REQUIRE(t.lines.size() == 4);
  CHECK(t.lines[0] == "a\r");  // the '\r' stays, as with Python's newline="\n"
  CHECK(t.lines[1] == "b");
  CHECK(t.lines[2].empty());
  CHECK(t.lines[3] == "c");
  CHECK(text_lines_from_bytes("mem", "x\n").lines.size() == 1);
  CHECK(text_lines_from_bytes("mem", "").lines.empty());
}

TEST_CASE("lines stay valid when the TextLines is moved, even for tiny files", "[io]") {
  std::vector<TextLines> all;
  for (int i = 0; i < 20; ++i) all.push_back(text_lines_from_bytes("mem", "ab\ncd"));  // reallocations move
  for (const auto& t : all) {
    REQUIRE(t.lines.size() == 2);
    CHECK(t.lines[0] == "ab");
    CHECK(t.lines[1] == "cd");
  }
}

TEST_CASE("invalid UTF-8 is an error naming the file and the line", "[io]") {
  CHECK_THROWS_WITH(text_lines_from_bytes("hyp.txt", "good\nstill good\nbad \xFF here\n"),
                    Catch::StartsWith("hyp.txt:3: invalid UTF-8 at byte 5 of the line"));
}

TEST_CASE("a file is read whole, and a missing file is a clear error", "[io]") {
  const std::string path = "test_text_lines.tmp";
  {
    std::ofstream out(path, std::ios::binary);
    out << "eins\nzwei\n";
  }
  const TextLines t = read_text_lines(path);
  std::remove(path.c_str());
  REQUIRE(t.lines.size() == 2);
  CHECK(t.lines[1] == "zwei");
  CHECK_THROWS_WITH(read_text_lines("/nonexistent/dir/file.txt"),
                    Catch::StartsWith("cannot open /nonexistent/dir/file.txt"));
}
