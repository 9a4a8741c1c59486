// translate's input, read in chunks so that a file of any size streams in bounded memory: each
// chunk's lines checked to be UTF-8 (or repaired), encoded, and translated together (sorted by
// length for batching). A chunk ends early when a pipe or terminal has no more input for now, so
// interactive use gets each translation at once. ChunkPrefetcher reads and encodes the next chunk
// on a thread of its own while the current one is translated (docs/DECODING.md, "From a line of
// text to a line of text").
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "decode/guide_input.h"
#include "decode/translation_output.h"
#include "decode/translator.h"
#include "io/line_reader.h"

namespace dragoman::decode {

// Lines a chunk holds at most by default: memory stays bounded (the lines, their ids and their
// translations), and 10,000 sentences are enough for length sorting to fill batches well.
inline constexpr std::int64_t kDefaultChunkLines = 10000;

struct ChunkOptions {
  std::int64_t chunk_lines = kDefaultChunkLines;  // at most, and the size of every chunk but the first ones
  // > 0: the first chunk holds this many lines at most and each next one twice the last, up to
  // chunk_lines (standard output: the first translations appear after one batch rather than after
  // chunk_lines lines). 0: every chunk chunk_lines (a file, written at the end anyway: the best
  // length sorting).
  std::int64_t first_chunk_lines = 0;
  // Invalid UTF-8 replaced with U+FFFD (as Python's errors="replace") and counted, instead of an
  // error naming the file, the line and the byte.
  bool replace_invalid = false;
};

// The lines at most of the chunk after one of `previous` lines (0: the first chunk).
std::int64_t next_chunk_size(std::int64_t previous, const ChunkOptions& options);

// A chunk of input lines, encoded.
struct Chunk {
  std::vector<std::vector<std::int32_t>> sources;  // each line's source ids
  std::vector<SourceWords> words;                  // each line's, when the encoder makes them
  std::vector<TargetGuide> guides;                 // each line's, when there are guide files
  std::int64_t replaced_lines = 0;                 // lines whose invalid UTF-8 replace_invalid repaired
};

// Fills a chunk's sources (and words, if it makes them) from its lines (valid UTF-8). Called on
// the prefetcher's thread.
using LineEncoder = std::function<void(const std::vector<std::string>& lines, Chunk& chunk)>;
// translate's encoder: Translator::encode, and each line's words when `with_words` (alignments and
// attention pictures need them).
LineEncoder translator_encoder(const Translator& translator, bool with_words);

// Reads up to `limit` lines into a chunk, each checked to be UTF-8 (or repaired), and encodes
// them. Once it has a line, it stops early when the input has nothing more for now (a pipe or
// terminal fed a line at a time): those lines are translated instead of waiting for more. Empty
// when the input has ended (or a wait was stopped) and no line was read. Invalid UTF-8 is an
// error "FILE:LINE: invalid UTF-8 at byte B of the line ..." (base/error.h throw_input_error).
// `guides` (nullptr: none) reads each line's guide from its files, and at the input's end checks
// that they end too.
std::optional<Chunk> read_chunk(io::LineSource& input, std::int64_t limit, bool replace_invalid,
                                const LineEncoder& encode, GuideReader* guides = nullptr);

// Reads and encodes the input one chunk ahead of the translation, on a thread of its own: the text
// work (reading, UTF-8 checks, SentencePiece) of the next chunk overlaps the decoding of this one,
// which on a GPU would otherwise idle the device. A reader's error (a bad line, a failed read) is
// rethrown by the next() that would have returned its chunk, so the lines before it are
// translated and written first, as without the thread.
class ChunkPrefetcher {
 public:
  // Starts reading the first chunk. `input`, `guides` (nullptr: none) and what `encode` uses must
  // outlive the prefetcher.
  ChunkPrefetcher(io::LineSource& input, ChunkOptions options, LineEncoder encode, GuideReader* guides = nullptr);
  // Stops a wait for input (a pipe with nothing to read) and waits for the thread.
  ~ChunkPrefetcher();
  ChunkPrefetcher(const ChunkPrefetcher&) = delete;
  ChunkPrefetcher& operator=(const ChunkPrefetcher&) = delete;

  // The next chunk (and starts reading the one after it), or nothing at the end of the input (or
  // when a wait was stopped). Throws what reading this chunk threw; after that, or after the end,
  // it must not be called again.
  std::optional<Chunk> next();

 private:
  void start();

  io::LineSource& input_;
  const ChunkOptions options_;
  const LineEncoder encode_;
  GuideReader* guides_;
  std::atomic<int> abandon_{0};
  std::int64_t limit_ = 0;  // of the chunk being read
  std::future<std::optional<Chunk>> pending_;
};

}  // namespace dragoman::decode
