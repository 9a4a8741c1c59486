// Line-at-a-time reading (CRLF read as LF, a last line without newline, line numbers, counting)
// and atomic piecewise writing (the file appears complete on commit, never half-written).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/line_reader.h"
#include "train/train_testing.h"

namespace dragoman {
namespace {

std::vector<std::string> read_all(const std::string& path) {
  LineReader reader(path);
  std::vector<std::string> lines;
  std::string line;
  while (reader.next(line)) {
    lines.push_back(line);
    CHECK(reader.line_number() == static_cast<std::int64_t>(lines.size()));
  }
  return lines;
}

}  // namespace

TEST_CASE("LineReader: lines without their ends, CRLF as LF, a last line without newline", "[io]") {
  const std::string dir = test::scratch_dir("line-reader");
  test::write_text(dir + "/a.txt", "eins\r\nzwei\n\n\r\ndrei \xFF\nvier");
  CHECK(read_all(dir + "/a.txt") == std::vector<std::string>{"eins", "zwei", "", "", "drei \xFF", "vier"});
  CHECK(count_lines(dir + "/a.txt") == 6);
  test::write_text(dir + "/b.txt", "x\n");
  CHECK(read_all(dir + "/b.txt") == std::vector<std::string>{"x"});
  CHECK(count_lines(dir + "/b.txt") == 1);
  test::write_text(dir + "/empty.txt", "");
  CHECK(read_all(dir + "/empty.txt").empty());
  CHECK(count_lines(dir + "/empty.txt") == 0);
  std::string long_line(100000, 'a');
  test::write_text(dir + "/long.txt", long_line + "\nb");
  CHECK(read_all(dir + "/long.txt") == std::vector<std::string>{long_line, "b"});
  CHECK(count_lines("-") == -1);
  CHECK(count_lines(dir) == -1);  // not a regular file
  CHECK_THROWS_WITH(LineReader(dir + "/missing.txt"), Catch::StartsWith("cannot open " + dir + "/missing.txt"));
}

TEST_CASE("AtomicFileWriter: the file appears complete on commit, and an abandoned one changes nothing", "[io]") {
  namespace fs = std::filesystem;
  const std::string dir = test::scratch_dir("atomic-writer");
  const std::string path = dir + "/out.txt";
  test::write_text(path, "old\n");
  {
    AtomicFileWriter writer(path);
    writer.append("new ");
    writer.append("text\n");
    CHECK(test::read_text(path) == "old\n");  // not before commit
    writer.commit();
    CHECK_THROWS_AS(writer.append("more"), Error);
  }
  CHECK(test::read_text(path) == "new text\n");
  {
    AtomicFileWriter writer(path);
    writer.append("half");
  }  // destroyed without commit: an error or an interruption
  CHECK(test::read_text(path) == "new text\n");
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);  // no temporary file left
  CHECK_THROWS_WITH(AtomicFileWriter(dir + "/no/such/dir/x.txt"), Catch::Contains("cannot write"));
}

}  // namespace dragoman
