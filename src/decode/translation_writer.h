// translate's output: each chunk's translations written in input order as its batches finish
// (from the first line not written yet up to the first line not translated yet), in the formats of
// translation_output.h, with an attention picture per line when asked; to standard output (flushed
// after each batch, so interactive use sees each translation at once) or to a file written
// atomically (it appears, complete, when the translation ends; an error or a signal leaves none).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "decode/model_files.h"
#include "decode/translation_output.h"
#include "decode/translator.h"
#include "io/atomic_file.h"
#include "text/vocabulary.h"

namespace dragoman::decode {

// Standard output, or a file written atomically (io/atomic_file.h).
class TranslationSink {
 public:
  // `path` "-": `standard_output` (stdout; tests pass another stream), each write flushed.
  // Otherwise PATH.tmp.PID is created at once (so a path that cannot be written fails here, before
  // the model loads) and renamed to PATH by commit(); destroyed without commit() it is removed.
  explicit TranslationSink(const std::string& path, std::FILE* standard_output = stdout);
  // Throws dragoman::Error when the bytes cannot be written.
  void write(const std::string& text);
  void commit();
  // The file's temporary name ("" for standard output), for a signal handler that removes it.
  std::string temporary_path() const;

 private:
  std::optional<io::AtomicFileWriter> file_;
  std::FILE* standard_output_;
};

// What the summary and the warnings count.
struct TranslationTotals {
  std::int64_t lines = 0, source_tokens = 0, target_tokens = 0, truncated = 0, replaced_lines = 0;
};

// Writes a chunk's translations in input order as they become ready, counting them in totals()
// (line numbers, in messages and pictures, run on across chunks).
class TranslationWriter {
 public:
  // `input_name` and `max_positions` for the truncation warnings; with `attention_dir`, each
  // line's picture DIR/NNNNNN.svg captioned "line N: " + `picture_caption` (attention_caption).
  // The sink and the vocabulary must outlive the writer.
  TranslationWriter(TranslationSink& sink, OutputOptions format, const text::Vocabulary& vocabulary,
                    std::string input_name, std::int64_t max_positions, std::string attention_dir = "",
                    std::string picture_caption = "");

  // A new chunk, with its lines' words when the output needs them (alignments, pictures; else
  // nullptr). They must live until the chunk is written.
  void start_chunk(const std::vector<SourceWords>* words);
  // Writes the lines of the chunk from the first one not written yet up to the first one not
  // translated yet (an empty n-best list): `results` as Translator::BatchDone gives them.
  void write_ready(const std::vector<Translation>& results);

  const TranslationTotals& totals() const { return totals_; }
  void count_replaced_lines(std::int64_t lines) { totals_.replaced_lines += lines; }

 private:
  void write_picture(const TranslatedHypothesis& h, std::int64_t index, const SourceWords& source) const;

  TranslationSink& sink_;
  const OutputOptions format_;
  const text::Vocabulary& vocabulary_;
  const std::string input_name_;
  const std::int64_t max_positions_;
  const std::string attention_dir_;
  const std::string picture_caption_;
  TranslationTotals totals_;
  std::size_t next_ = 0;  // the first line of the chunk not written yet
  const std::vector<SourceWords>* words_ = nullptr;
};

// What the attention pictures show: "decoder layer 6 of 6, the average of 8 heads" (and ", the
// average of N models" for an ensemble), `choice` checked against every model.
std::string attention_caption(const DecodingModels& models, const AttentionChoice& choice);

}  // namespace dragoman::decode
