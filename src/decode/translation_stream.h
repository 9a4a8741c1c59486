// translate's pipeline from input lines to output lines: chunks read and encoded one ahead
// (input_chunks.h), each translated in length-sorted batches (translator.h), the lines of each
// batch written in input order as they finish (translation_writer.h), progress after each batch,
// and a stop flag (a signal) checked between batches. The command line only wires options to it
// (cli/translate.cpp); docs/DECODING.md describes the steps.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "base/timing.h"
#include "decode/input_chunks.h"
#include "decode/translation_writer.h"
#include "decode/translator.h"
#include "device/device.h"
#include "io/line_reader.h"
#include "io/status_line.h"

namespace dragoman::decode {

// How a stream ended.
enum class StreamEnd {
  kDone,     // the input ended and every line is written
  kStopped,  // *stop became non-zero: the lines written are complete and in input order
};

// Translates every line of `input` with `translator` into `writer` (each chunk's words made when
// `with_words`: the writer's alignments and pictures need them). *stop (nullptr: never) is checked
// after every chunk is read and every batch is written; a wait for input it must cut short is the
// input's business (LineSource::stop_waiting_when). Errors (a bad line, a failed read or write)
// are thrown after the lines before them are written.
// `guides` (nullptr: none) gives each line its target prefix and constraints from their files.
StreamEnd translate_stream(const Translator& translator, io::LineSource& input, const ChunkOptions& chunks,
                           bool with_words, TranslationWriter& writer, io::Progress& progress,
                           const std::atomic<int>* stop, GuideReader* guides = nullptr);

// The summary translate logs at the end: lines, tokens, rates, the allocator's peak on `device`
// (debug), and the counts of truncated lines and of lines with invalid UTF-8 replaced.
void log_translation_summary(const TranslationTotals& totals, double seconds, std::int64_t max_positions,
                             const Device& device);

}  // namespace dragoman::decode
