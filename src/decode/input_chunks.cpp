// translate's input in chunks, read one chunk ahead (see input_chunks.h).
#include "decode/input_chunks.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "base/utf8.h"

namespace dragoman::decode {

std::int64_t next_chunk_size(std::int64_t previous, const ChunkOptions& options) {
  if (options.first_chunk_lines <= 0) return options.chunk_lines;
  return previous == 0 ? std::min(options.first_chunk_lines, options.chunk_lines)
                       : std::min(previous * 2, options.chunk_lines);
}

LineEncoder translator_encoder(const Translator& translator, bool with_words) {
  return [&translator, with_words](const std::vector<std::string>& lines, Chunk& chunk) {
    chunk.sources = translator.encode(lines);
    if (with_words) {
      for (const std::string& line : lines) chunk.words.push_back(source_words(line, translator.vocabulary()));
    }
  };
}

std::optional<Chunk> read_chunk(io::LineSource& input, std::int64_t limit, bool replace_invalid,
                                const LineEncoder& encode, GuideReader* guides) {
  std::vector<std::string> lines;
  Chunk chunk;
  std::string line;
  bool more = true;
  while (static_cast<std::int64_t>(lines.size()) < limit && (lines.empty() || input.ready()) &&
         (more = input.next(line))) {
    const std::size_t bad = utf8::find_invalid(line);
    if (bad != std::string::npos) {
      if (!replace_invalid) {
        throw_input_error(input.name(), static_cast<std::size_t>(input.line_number()),
                          "invalid UTF-8 at byte " + std::to_string(bad + 1) +
                              " of the line (expected UTF-8 text; --replace-invalid replaces bad bytes with U+FFFD)");
      }
      line = utf8::replace_invalid(line);
      ++chunk.replaced_lines;
    }
    if (guides != nullptr) chunk.guides.push_back(guides->next(input));
    lines.push_back(std::move(line));
  }
  if (!more && guides != nullptr && !input.stopped()) guides->finish(input);
  if (lines.empty()) return std::nullopt;
  encode(lines, chunk);
  return chunk;
}

ChunkPrefetcher::ChunkPrefetcher(io::LineSource& input, ChunkOptions options, LineEncoder encode, GuideReader* guides)
    : input_(input), options_(options), encode_(std::move(encode)), guides_(guides) {
  input_.stop_waiting_when(&abandon_);
  start();
}

ChunkPrefetcher::~ChunkPrefetcher() {
  abandon_ = 1;
  if (pending_.valid()) pending_.wait();
}

std::optional<Chunk> ChunkPrefetcher::next() {
  std::optional<Chunk> chunk = pending_.get();
  if (chunk) start();
  return chunk;
}

void ChunkPrefetcher::start() {
  limit_ = next_chunk_size(limit_, options_);
  pending_ = std::async(std::launch::async, [this, limit = limit_] {
    return read_chunk(input_, limit, options_.replace_invalid, encode_, guides_);
  });
}

}  // namespace dragoman::decode
