// Line-at-a-time reading (CRLF read as LF, a last line without newline, line numbers, counting)
// and atomic piecewise writing (the file appears complete on commit, never half-written).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "base/error.h"
#include "io/atomic_file.h"
#include "io/line_reader.h"
#include "train/train_testing.h"

namespace dragoman::io {
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

std::string writer_temporary_path(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

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

TEST_CASE("LineReader: on a pipe, ready() says whether a line can be had without waiting", "[io]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  LineReader reader("/dev/fd/" + std::to_string(fds[0]));  // the pipe's read end, opened again
  ::close(fds[0]);
  const auto write = [&](const std::string& text) {
    REQUIRE(::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  };
  CHECK_FALSE(reader.ready());  // nothing written yet: next() would wait
  write("eins\nzwei\n");
  CHECK(reader.ready());
  std::string line;
  REQUIRE(reader.next(line));
  CHECK(line == "eins");
  CHECK(reader.ready());  // "zwei" is buffered already
  REQUIRE(reader.next(line));
  CHECK(line == "zwei");
  CHECK_FALSE(reader.ready());
  // A stop flag ends a wait for input: next() returns false and says why.
  std::atomic<int> stop{0};
  reader.stop_waiting_when(&stop);
  stop = 2;
  CHECK_FALSE(reader.next(line));
  CHECK(reader.stopped());
  stop = 0;
  // Any of several flags does (a signal's, and a reader thread's owner's).
  std::atomic<int> abandon{0};
  reader.stop_waiting_when(&abandon);
  abandon = 1;
  CHECK_FALSE(reader.next(line));
  abandon = 0;
  write("drei");  // a last line without '\n', then the end
  ::close(fds[1]);
  CHECK(reader.ready());
  REQUIRE(reader.next(line));
  CHECK(line == "drei");
  CHECK(reader.ready());  // the end: next() returns false at once
  CHECK_FALSE(reader.next(line));
  CHECK(reader.line_number() == 3);
}

TEST_CASE("LineReader: a directory is refused when opened", "[io]") {
  const std::string dir = test::scratch_dir("line-reader-dir");
  CHECK_THROWS_WITH(LineReader(dir), Catch::Contains("cannot open " + dir + ": it is a directory"));
}

TEST_CASE("check_writable: names the path and what is wrong, and leaves nothing behind", "[io]") {
  namespace fs = std::filesystem;
  const std::string dir = test::scratch_dir("check-writable");
  CHECK_NOTHROW(check_writable(dir + "/out.txt"));
  CHECK_FALSE(fs::exists(dir + "/out.txt"));
  CHECK(fs::is_empty(dir));
  CHECK_THROWS_WITH(check_writable(dir), "cannot write " + dir + ": it is a directory (expected a file name)");
  CHECK_THROWS_WITH(check_writable(dir + "/no/out.txt"),
                    "cannot write " + dir + "/no/out.txt: directory " + dir + "/no does not exist");
  test::write_text(dir + "/file", "x");
  CHECK_THROWS_WITH(check_writable(dir + "/file/out.txt"),
                    "cannot write " + dir + "/file/out.txt: " + dir + "/file is not a directory");
  // /sys refuses new files, to root as well.
  CHECK_THROWS_WITH(check_writable("/sys/dragoman-test.txt"),
                    Catch::StartsWith("cannot write /sys/dragoman-test.txt: cannot create a file in /sys: "));
  CHECK_THROWS_WITH(AtomicFileWriter(dir), Catch::Contains("it is a directory"));
}

TEST_CASE("AtomicFileWriter: a device or a named pipe is written in place, never replaced by a file", "[io]") {
  namespace fs = std::filesystem;
  const std::string dir = test::scratch_dir("atomic-writer-in-place");
  // A link to /dev/null (as `-o /dev/null` finds the device; a link, so that a writer that renamed
  // over its path would replace the link here, not the machine's /dev/null).
  const std::string null_link = dir + "/null";
  fs::create_symlink("/dev/null", null_link);
  for (int round = 0; round < 2; ++round) {  // committed, then abandoned
    check_writable(null_link);
    AtomicFileWriter writer(null_link);
    CHECK(writer.temporary_path().empty());
    writer.append("translations\n");
    if (round == 0) writer.commit();
  }
  CHECK(fs::is_symlink(null_link));
  CHECK(fs::is_character_file(null_link));
  // A named pipe: check_writable does not open it (that would wait for a reader, and end the
  // reader's input), and the writer writes into it.
  const std::string fifo = dir + "/pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  check_writable(fifo);                                            // returns at once, with no reader
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // a reader first: the writer's open does not wait
  REQUIRE(reader >= 0);
  {
    AtomicFileWriter writer(fifo);
    writer.append("through ");
    writer.append("the pipe\n");
    writer.commit();
  }
  char buffer[64] = {};
  const ssize_t n = ::read(reader, buffer, sizeof buffer);
  ::close(reader);
  CHECK(std::string(buffer, n > 0 ? static_cast<std::size_t>(n) : 0) == "through the pipe\n");
  CHECK(fs::is_fifo(fifo));
  CHECK_FALSE(fs::exists(writer_temporary_path(fifo)));
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
  // The last step fails: a directory appeared where the file should go, so the rename is refused;
  // the temporary file goes, the directory stays.
  {
    AtomicFileWriter writer(dir + "/late");
    writer.append("text");
    fs::create_directory(dir + "/late");
    CHECK_THROWS_WITH(writer.commit(), Catch::Contains("cannot write " + dir + "/late: rename failed"));
  }
  CHECK(fs::is_directory(dir + "/late"));
  CHECK_FALSE(fs::exists(writer_temporary_path(dir + "/late")));
}

}  // namespace dragoman::io
