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

namespace {

std::vector<std::string> stream_lines(const std::string& bytes) {
  const std::string path = "test_text_lines_stream.tmp";
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  std::vector<std::string> lines;
  {
    TextLineStream stream(path);
    std::string_view line;
    while (stream.next(line)) {
      lines.emplace_back(line);
      CHECK(stream.line_number() == lines.size());
    }
  }
  std::remove(path.c_str());
  return lines;
}

}  // namespace

TEST_CASE("a text line stream gives read_text_lines's lines in bounded memory", "[io]") {
  // The same lines as the whole-file reader, for newline-only splitting, a '\r', empty lines, a last
  // line without newline, an empty file, and lines longer than the stream's 1 MiB block.
  const std::string long_line(3 * (1 << 20) + 17, 'x');
  for (const std::string& bytes :
       {std::string("a\r\nb\n\nc"), std::string("x\n"), std::string(), std::string("\n\n"),
        "first\n" + long_line + "\nmiddle\n" + long_line, long_line + "\n" + std::string(1 << 20, 'y') + "\n"}) {
    const TextLines whole = text_lines_from_bytes("mem", bytes);
    const std::vector<std::string> streamed = stream_lines(bytes);
    REQUIRE(streamed.size() == whole.lines.size());
    for (std::size_t i = 0; i < streamed.size(); ++i) CHECK(streamed[i] == whole.lines[i]);
  }
  // A line that ends exactly at a block boundary, and many short lines over several blocks.
  std::string many;
  for (int i = 0; i < 300000; ++i) many += std::to_string(i) + "\n";
  const std::vector<std::string> lines = stream_lines(std::string((1 << 20) - 1, 'z') + "\n" + many);
  REQUIRE(lines.size() == 300001);
  CHECK(lines[0].size() == (1 << 20) - 1);
  CHECK(lines[300000] == "299999");
}

TEST_CASE("a text line stream names the file and line of invalid UTF-8, and a missing file", "[io]") {
  const std::string path = "test_text_lines_bad.tmp";
  {
    std::ofstream out(path, std::ios::binary);
    out << "good\nstill good\nbad \xFF here\n";
  }
  TextLineStream stream(path);
  std::string_view line;
  CHECK(stream.next(line));
  CHECK(stream.next(line));
  CHECK_THROWS_WITH(stream.next(line), Catch::StartsWith(path + ":3: invalid UTF-8 at byte 5 of the line"));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(TextLineStream("/nonexistent/dir/file.txt"), Catch::StartsWith("cannot open /nonexistent/dir"));
}
