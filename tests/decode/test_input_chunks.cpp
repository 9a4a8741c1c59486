// translate's input in chunks (decode/input_chunks.h): chunk sizes, chunks that end where a pipe
// has nothing more for now (a stand-in source, and a real LineReader on a pipe written in small
// pieces), and the prefetcher: chunks in input order, read one ahead on its thread, a reader's
// error and a bad line's "FILE:LINE: invalid UTF-8" rethrown after the chunks before them, and a
// reader waiting on a pipe stopped when the prefetcher goes. Every wait is on a condition (with a
// generous deadline that only a broken build reaches), never a sleep.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "decode/input_chunks.h"
#include "io/line_reader.h"
#include "train/train_testing.h"

namespace dragoman::decode {
namespace {

constexpr auto kDeadline = std::chrono::seconds(60);

// The test encoder: each line's bytes as its ids, so a chunk gives its lines back.
void encode_bytes(const std::vector<std::string>& lines, Chunk& chunk) {
  for (const std::string& line : lines) chunk.sources.emplace_back(line.begin(), line.end());
}
std::vector<std::string> lines_of(const Chunk& chunk) {
  std::vector<std::string> lines;
  for (const auto& ids : chunk.sources) lines.emplace_back(ids.begin(), ids.end());
  return lines;
}

std::vector<std::string> numbered_lines(int n) {
  std::vector<std::string> lines;
  for (int i = 1; i <= n; ++i) lines.push_back("line " + std::to_string(i));
  return lines;
}

// Lines from memory, as a pipe would give them: not ready() at the positions in `pauses` (the
// writer has not written that line yet), and a failed read at `fail_at` (a 1-based line number;
// 0: none). With `gate`, next() waits before the line at that position until release() (a slow
// writer), and says how far it has got.
class StandInLines : public io::LineSource {
 public:
  explicit StandInLines(std::vector<std::string> lines, std::set<std::size_t> pauses = {}, std::size_t fail_at = 0)
      : lines_(std::move(lines)), pauses_(std::move(pauses)), fail_at_(fail_at) {}

  bool next(std::string& line) override {
    std::unique_lock<std::mutex> lock(mutex_);
    asked_ = std::max(asked_, next_ + 1);
    changed_.notify_all();
    changed_.wait(lock, [&] { return next_ < gate_ || abandoned(); });
    if (abandoned()) return false;
    if (next_ >= lines_.size()) return false;
    if (fail_at_ != 0 && next_ + 1 == fail_at_) throw Error(name_ + ": read failed: Input/output error");
    line = lines_[next_++];
    return true;
  }
  bool ready() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return pauses_.count(next_) == 0;
  }
  void stop_waiting_when(const std::atomic<int>* flag) override {
    std::lock_guard<std::mutex> lock(mutex_);
    flags_.push_back(flag);
  }
  std::int64_t line_number() const override { return static_cast<std::int64_t>(next_); }
  const std::string& name() const override { return name_; }

  // next() waits before the line at 0-based `position` until release().
  void gate_at(std::size_t position) {
    std::lock_guard<std::mutex> lock(mutex_);
    gate_ = position;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    gate_ = static_cast<std::size_t>(-1);
    changed_.notify_all();
  }
  // Waits until next() has been asked for the line at 0-based `position` (or the deadline).
  bool wait_until_asked_for(std::size_t position) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, kDeadline, [&] { return asked_ > position; });
  }

 private:
  bool abandoned() const {
    for (const std::atomic<int>* flag : flags_) {
      if (flag != nullptr && flag->load() != 0) return true;
    }
    return false;
  }

  const std::string name_ = "stand-in.txt";
  std::vector<std::string> lines_;
  std::set<std::size_t> pauses_;
  std::size_t fail_at_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t next_ = 0;   // the next line's position
  std::size_t asked_ = 0;  // positions asked for so far
  std::size_t gate_ = static_cast<std::size_t>(-1);
  std::vector<const std::atomic<int>*> flags_;
};

// A pipe whose read end a LineReader opens (as translate reads standard input fed by a program).
struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { CHECK(::pipe(fds) == 0); }
  ~Pipe() {
    close_write();
    if (fds[0] >= 0) ::close(fds[0]);
  }
  std::string path() const { return "/dev/fd/" + std::to_string(fds[0]); }
  // Whether all of `bytes` were written (no Catch assertion: a writer thread calls it).
  bool write(const std::string& bytes) const {
    return ::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  }
  void close_write() {
    if (fds[1] >= 0) ::close(fds[1]);
    fds[1] = -1;
  }
};

}  // namespace

TEST_CASE("chunk sizes: a file's are all chunk_lines, standard output's double from the first", "[decode]") {
  ChunkOptions file;
  file.chunk_lines = 100;
  CHECK(next_chunk_size(0, file) == 100);
  CHECK(next_chunk_size(100, file) == 100);
  ChunkOptions out = file;
  out.first_chunk_lines = 16;
  std::vector<std::int64_t> sizes;
  for (std::int64_t size = 0, i = 0; i < 6; ++i) sizes.push_back(size = next_chunk_size(size, out));
  CHECK(sizes == std::vector<std::int64_t>{16, 32, 64, 100, 100, 100});
  out.first_chunk_lines = 500;  // never above chunk_lines
  CHECK(next_chunk_size(0, out) == 100);
  CHECK(ChunkOptions{}.chunk_lines == 10000);
}

TEST_CASE("read_chunk stops at its limit, and where the input has nothing more for now", "[decode]") {
  // Lines 1-2 come at once, then the writer pauses; 3-5 come together, then the input ends.
  StandInLines input(numbered_lines(5), {2});
  const auto chunk1 = read_chunk(input, 10, false, encode_bytes);
  CHECK(chunk1.has_value());
  CHECK((chunk1 ? lines_of(*chunk1) : std::vector<std::string>{}) == std::vector<std::string>{"line 1", "line 2"});
  const auto chunk2 = read_chunk(input, 2, false, encode_bytes);  // the limit
  CHECK((chunk2 ? lines_of(*chunk2) : std::vector<std::string>{}) == std::vector<std::string>{"line 3", "line 4"});
  const auto chunk3 = read_chunk(input, 10, false, encode_bytes);
  CHECK((chunk3 ? lines_of(*chunk3) : std::vector<std::string>{}) == std::vector<std::string>{"line 5"});
  CHECK_FALSE(read_chunk(input, 10, false, encode_bytes).has_value());

  // A chunk's first line is waited for even when none is ready: a chunk is never empty.
  StandInLines waiting({"only"}, {0});
  const auto first = read_chunk(waiting, 10, false, encode_bytes);
  CHECK((first ? lines_of(*first) : std::vector<std::string>{}) == std::vector<std::string>{"only"});
}

TEST_CASE("read_chunk on a pipe: a half-written line waits for the next chunk", "[decode]") {
  Pipe pipe;
  io::LineReader reader(pipe.path());
  CHECK(pipe.write("one\ntw"));  // the second line's end not written yet
  const auto chunk1 = read_chunk(reader, 100, false, encode_bytes);
  CHECK((chunk1 ? lines_of(*chunk1) : std::vector<std::string>{}) == std::vector<std::string>{"one"});
  CHECK(pipe.write("o\nthree\nfo"));
  const auto chunk2 = read_chunk(reader, 100, false, encode_bytes);
  CHECK((chunk2 ? lines_of(*chunk2) : std::vector<std::string>{}) == std::vector<std::string>{"two", "three"});
  CHECK(pipe.write("ur"));
  pipe.close_write();  // the last line has no '\n': still a line
  const auto chunk3 = read_chunk(reader, 100, false, encode_bytes);
  CHECK((chunk3 ? lines_of(*chunk3) : std::vector<std::string>{}) == std::vector<std::string>{"four"});
  CHECK_FALSE(read_chunk(reader, 100, false, encode_bytes).has_value());
}

TEST_CASE("read_chunk on a pipe written a few bytes at a time gives every line once, in order", "[decode]") {
  const std::vector<std::string> lines = numbered_lines(200);
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  Pipe pipe;
  io::LineReader reader(pipe.path());
  bool written = true;
  std::thread writer([&] {
    for (std::size_t i = 0; i < text.size(); i += 3) written = pipe.write(text.substr(i, 3)) && written;
    pipe.close_write();
  });
  std::vector<std::string> read;
  std::int64_t largest = 0;
  while (const auto chunk = read_chunk(reader, 16, false, encode_bytes)) {
    const std::vector<std::string> got = lines_of(*chunk);
    largest = std::max<std::int64_t>(largest, static_cast<std::int64_t>(got.size()));
    read.insert(read.end(), got.begin(), got.end());
  }
  writer.join();
  CHECK(written);
  CHECK(read == lines);
  CHECK(largest <= 16);
}

TEST_CASE("the prefetcher gives the chunks in input order, growing from the first", "[decode]") {
  const std::vector<std::string> lines = numbered_lines(80);
  StandInLines input(lines);
  ChunkOptions options;
  options.chunk_lines = 20;
  options.first_chunk_lines = 3;
  ChunkPrefetcher chunks(input, options, encode_bytes);
  std::vector<std::string> read;
  std::vector<std::size_t> sizes;
  while (const auto chunk = chunks.next()) {
    const std::vector<std::string> got = lines_of(*chunk);
    sizes.push_back(got.size());
    read.insert(read.end(), got.begin(), got.end());
  }
  CHECK(read == lines);
  CHECK(sizes == std::vector<std::size_t>{3, 6, 12, 20, 20, 19});
}

TEST_CASE("the prefetcher reads the next chunk while the caller holds this one", "[decode]") {
  StandInLines input(numbered_lines(10));
  ChunkOptions options;
  options.chunk_lines = 4;
  input.gate_at(6);  // the writer is slow after six lines
  ChunkPrefetcher chunks(input, options, encode_bytes);
  const auto chunk1 = chunks.next();
  CHECK((chunk1 ? lines_of(*chunk1).size() : 0) == 4);
  // Without another next(), the thread reads the second chunk as far as the writer has written.
  CHECK(input.wait_until_asked_for(6));
  input.release();
  const auto chunk2 = chunks.next();
  CHECK((chunk2 ? lines_of(*chunk2) : std::vector<std::string>{}) ==
        std::vector<std::string>{"line 5", "line 6", "line 7", "line 8"});
  const auto chunk3 = chunks.next();
  CHECK((chunk3 ? lines_of(*chunk3) : std::vector<std::string>{}) == std::vector<std::string>{"line 9", "line 10"});
  CHECK_FALSE(chunks.next().has_value());
}

TEST_CASE("the prefetcher rethrows a failed read after the chunks before it", "[decode]") {
  StandInLines input(numbered_lines(10), {}, 6);  // reading line 6 fails
  ChunkOptions options;
  options.chunk_lines = 2;
  ChunkPrefetcher chunks(input, options, encode_bytes);
  std::vector<std::string> read;
  for (int i = 0; i < 2; ++i) {
    const auto chunk = chunks.next();
    const std::vector<std::string> got = chunk ? lines_of(*chunk) : std::vector<std::string>{};
    read.insert(read.end(), got.begin(), got.end());
  }
  CHECK(read == std::vector<std::string>{"line 1", "line 2", "line 3", "line 4"});
  // Line 5 was read into the chunk that failed: it is lost with it, as without the thread.
  CHECK_THROWS_WITH(chunks.next(), "stand-in.txt: read failed: Input/output error");
}

TEST_CASE("the prefetcher reports invalid UTF-8 with the file and the line, after the lines before", "[decode]") {
  const std::string path = test::scratch_dir("input-chunks") + "/bad.txt";
  test::write_text(path, "ok\nfine\nstill fine\n\xff bad\nafter\n");
  ChunkOptions options;
  options.chunk_lines = 3;

  SECTION("an error") {
    io::LineReader reader(path);
    ChunkPrefetcher chunks(reader, options, encode_bytes);
    const auto chunk1 = chunks.next();
    CHECK((chunk1 ? lines_of(*chunk1) : std::vector<std::string>{}) ==
          std::vector<std::string>{"ok", "fine", "still fine"});
    CHECK_THROWS_WITH(chunks.next(), Catch::Matchers::StartsWith(path + ":4: invalid UTF-8 at byte 1 of the line"));
  }
  SECTION("or, with replace_invalid, U+FFFD and a count") {
    options.replace_invalid = true;
    io::LineReader reader(path);
    ChunkPrefetcher chunks(reader, options, encode_bytes);
    const auto chunk1 = chunks.next();
    CHECK((chunk1 ? chunk1->replaced_lines : -1) == 0);
    const auto chunk2 = chunks.next();
    CHECK((chunk2 ? lines_of(*chunk2) : std::vector<std::string>{}) ==
          std::vector<std::string>{"\xef\xbf\xbd bad", "after"});
    CHECK((chunk2 ? chunk2->replaced_lines : -1) == 1);
    CHECK_FALSE(chunks.next().has_value());
  }
}

TEST_CASE("a prefetcher that goes stops its reader's wait on a pipe with nothing to read", "[decode]") {
  Pipe pipe;  // the write end stays open and silent
  io::LineReader reader(pipe.path());
  auto done = std::async(std::launch::async, [&] { ChunkPrefetcher chunks(reader, ChunkOptions{}, encode_bytes); });
  const bool stopped = done.wait_for(kDeadline) == std::future_status::ready;
  CHECK(stopped);
  if (!stopped) pipe.close_write();  // a broken build: end the wait so the test ends
  done.get();
}

}  // namespace dragoman::decode
