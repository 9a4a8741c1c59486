// translate's output (decode/translation_writer.h): a chunk's lines written in input order as its
// batches finish, never past a line not translated yet, numbered on across chunks; standard output
// gets each batch's lines at once; a file appears, complete, only at commit(), and a sink that goes
// without commit() leaves no file, not even its temporary one, and an old file as it was.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "decode/decode_testing.h"
#include "decode/translation_writer.h"
#include "train/train_testing.h"

namespace dragoman::decode {
namespace {

text::Vocabulary letters() {
  return text::Vocabulary::load(test::write_letters_vocabulary(test::scratch_dir("translation-writer-vocabulary")));
}

// A translated line: `text` (letters a..j and spaces) from a source of `source_tokens` tokens.
Translation translated_line(const text::Vocabulary& vocabulary, const std::string& text, std::int64_t source_tokens) {
  Translation t;
  TranslatedHypothesis h;
  h.tokens = vocabulary.encode(text);
  h.text = vocabulary.decode(h.tokens);
  h.score = -1.5;
  h.log_prob = -3;
  t.nbest = {h};
  t.source_tokens = source_tokens;
  return t;
}

}  // namespace

TEST_CASE("translate's writer writes a chunk's lines in input order as they are translated", "[decode]") {
  const text::Vocabulary vocabulary = letters();
  std::FILE* standard_output = std::tmpfile();
  CHECK(standard_output != nullptr);
  TranslationSink sink("-", standard_output);
  CHECK(sink.temporary_path().empty());
  TranslationWriter writer(sink, OutputOptions{}, vocabulary, "in.txt", 16);

  // A chunk of four lines, batched longest first: lines 2 and 0 are done, 1 and 3 not yet.
  std::vector<Translation> results(4);
  writer.start_chunk(nullptr);
  results[2] = translated_line(vocabulary, "c c", 2);
  writer.write_ready(results);
  CHECK(test::contents(standard_output).empty());  // line 0 is not translated yet
  results[0] = translated_line(vocabulary, "a", 1);
  writer.write_ready(results);
  CHECK(test::contents(standard_output) == "a\n");  // not line 2: line 1 comes first
  results[1] = translated_line(vocabulary, "b b b", 3);
  writer.write_ready(results);
  CHECK(test::contents(standard_output) == "a\nb b b\nc c\n");
  results[3] = translated_line(vocabulary, "d", 1);
  writer.write_ready(results);
  writer.write_ready(results);  // nothing new: nothing written twice
  CHECK(test::contents(standard_output) == "a\nb b b\nc c\nd\n");
  CHECK(writer.totals().lines == 4);
  CHECK(writer.totals().source_tokens == 7);
  CHECK(writer.totals().target_tokens == 7);

  // The next chunk's lines follow, numbered on (n-best lines carry the input line's number).
  std::FILE* nbest_output = std::tmpfile();
  TranslationSink nbest_sink("-", nbest_output);
  OutputOptions nbest;
  nbest.nbest = 1;
  TranslationWriter numbered(nbest_sink, nbest, vocabulary, "in.txt", 16);
  numbered.start_chunk(nullptr);
  numbered.write_ready({translated_line(vocabulary, "a", 1), translated_line(vocabulary, "b", 1)});
  numbered.start_chunk(nullptr);
  numbered.write_ready({translated_line(vocabulary, "c", 1)});
  CHECK(test::contents(nbest_output) ==
        "0 ||| a ||| F0= -3.000000 ||| -1.500000\n"
        "1 ||| b ||| F0= -3.000000 ||| -1.500000\n"
        "2 ||| c ||| F0= -3.000000 ||| -1.500000\n");
  CHECK(numbered.totals().lines == 3);
  std::fclose(nbest_output);
  std::fclose(standard_output);
}

TEST_CASE("translate's writer counts truncated lines", "[decode]") {
  const text::Vocabulary vocabulary = letters();
  std::FILE* standard_output = std::tmpfile();
  TranslationSink sink("-", standard_output);
  TranslationWriter writer(sink, OutputOptions{}, vocabulary, "in.txt", 2);
  Translation cut = translated_line(vocabulary, "a b", 2);
  cut.truncated = true;
  writer.start_chunk(nullptr);
  writer.write_ready({cut, translated_line(vocabulary, "c", 1), cut});
  CHECK(writer.totals().truncated == 2);
  CHECK(writer.totals().lines == 3);
  writer.count_replaced_lines(5);
  CHECK(writer.totals().replaced_lines == 5);
  std::fclose(standard_output);
}

TEST_CASE("translate's output file appears, complete, only when committed", "[decode]") {
  const text::Vocabulary vocabulary = letters();
  const std::string dir = test::scratch_dir("translation-writer-files");
  const std::string path = dir + "/out.txt";

  SECTION("committed: every line, and no temporary file left") {
    TranslationSink sink(path);
    const std::string temporary = sink.temporary_path();
    CHECK(std::filesystem::exists(temporary));  // created at once: an unwritable path fails before any work
    TranslationWriter writer(sink, OutputOptions{}, vocabulary, "in.txt", 16);
    writer.start_chunk(nullptr);
    writer.write_ready({translated_line(vocabulary, "a", 1), translated_line(vocabulary, "b", 1)});
    CHECK_FALSE(std::filesystem::exists(path));  // lines written so far are not the file yet
    writer.start_chunk(nullptr);
    writer.write_ready({translated_line(vocabulary, "c", 1)});
    sink.commit();
    CHECK(test::read_text(path) == "a\nb\nc\n");
    CHECK_FALSE(std::filesystem::exists(temporary));
  }
  SECTION("not committed (an error, a signal): no file, no temporary file, an old file untouched") {
    test::write_text(path, "the old translation\n");
    std::string temporary;
    {
      TranslationSink sink(path);
      temporary = sink.temporary_path();
      TranslationWriter writer(sink, OutputOptions{}, vocabulary, "in.txt", 16);
      writer.start_chunk(nullptr);
      writer.write_ready({translated_line(vocabulary, "a", 1)});
    }
    CHECK(test::read_text(path) == "the old translation\n");
    CHECK_FALSE(std::filesystem::exists(temporary));
    std::filesystem::remove(path);
    {
      TranslationSink sink(path);
      sink.write("a\n");
    }
    CHECK_FALSE(std::filesystem::exists(path));
  }
}

}  // namespace dragoman::decode
