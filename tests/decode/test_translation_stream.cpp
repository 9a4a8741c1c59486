// translate's pipeline (decode/translation_stream.h) on a small random model: every line written
// once, in input order, as the translator translates the lines all at once, whatever the chunk
// sizes; and a stop (a signal while waiting for input) ends the stream with nothing more written.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "decode/decode_testing.h"
#include "decode/translation_stream.h"
#include "train/train_testing.h"

namespace dragoman::decode {
namespace {

const std::vector<std::string> kLines = {"a b c", "", "j i h g f", "d", "e f g h", "a a", "b", "c d e f g h i j"};

// The lines from memory; when they run out, the stop flag is set (a signal while waiting for more).
class LinesThenStop : public io::LineSource {
 public:
  LinesThenStop(std::vector<std::string> lines, std::atomic<int>* stop) : lines_(std::move(lines)), stop_(stop) {}
  bool next(std::string& line) override {
    if (next_ == lines_.size()) {
      if (stop_ != nullptr) *stop_ = 2;
      return false;
    }
    line = lines_[next_++];
    return true;
  }
  bool ready() override { return true; }
  void stop_waiting_when(const std::atomic<int>*) override {}
  std::int64_t line_number() const override { return static_cast<std::int64_t>(next_); }
  const std::string& name() const override { return name_; }

 private:
  std::vector<std::string> lines_;
  std::atomic<int>* stop_;
  std::size_t next_ = 0;
  const std::string name_ = "lines";
};

}  // namespace

TEST_CASE("translate's stream writes every line once, in input order, whatever the chunks", "[decode]") {
  const model::Transformer model = test::letters_model(16);
  const text::Vocabulary vocabulary =
      text::Vocabulary::load(test::write_letters_vocabulary(test::scratch_dir("translation-stream")));
  TranslatorOptions options;
  options.search.beam = 2;
  options.search.max_length_b = 4;
  options.batch_sentences = 2;
  const Translator translator(model, vocabulary, options);
  std::string expected;
  for (const Translation& t : translator.translate(kLines)) expected += t.nbest.front().text + "\n";

  for (const std::int64_t first_chunk_lines : {0, 1, 3}) {
    INFO("first chunk " << first_chunk_lines);
    ChunkOptions chunks;
    chunks.chunk_lines = 5;
    chunks.first_chunk_lines = first_chunk_lines;
    LinesThenStop input(kLines, nullptr);
    std::FILE* out = std::tmpfile();
    TranslationSink sink("-", out);
    TranslationWriter writer(sink, OutputOptions{}, vocabulary, input.name(), 16);
    io::Progress progress("translate", "lines", -1, io::Progress::Options{false, false});
    CHECK(translate_stream(translator, input, chunks, false, writer, progress, nullptr) == StreamEnd::kDone);
    CHECK(test::contents(out) == expected);
    CHECK(writer.totals().lines == static_cast<std::int64_t>(kLines.size()));
    std::fclose(out);
  }
}

TEST_CASE("translate's stream stops at a stop flag, the lines written complete", "[decode]") {
  const model::Transformer model = test::letters_model(16);
  const text::Vocabulary vocabulary =
      text::Vocabulary::load(test::write_letters_vocabulary(test::scratch_dir("translation-stream-stop")));
  TranslatorOptions options;
  options.search.beam = 2;
  options.search.max_length_b = 4;
  const Translator translator(model, vocabulary, options);
  std::atomic<int> stop{0};
  LinesThenStop input(kLines, &stop);  // the flag is set while the only chunk is read
  std::FILE* out = std::tmpfile();
  TranslationSink sink("-", out);
  TranslationWriter writer(sink, OutputOptions{}, vocabulary, input.name(), 16);
  io::Progress progress("translate", "lines", -1, io::Progress::Options{false, false});
  CHECK(translate_stream(translator, input, ChunkOptions{}, false, writer, progress, &stop) == StreamEnd::kStopped);
  CHECK(test::contents(out).empty());
  CHECK(writer.totals().lines == 0);
  std::fclose(out);
}

}  // namespace dragoman::decode
