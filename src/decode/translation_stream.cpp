// translate's pipeline from input lines to output lines (see translation_stream.h).
#include "decode/translation_stream.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "core/allocator.h"

namespace dragoman::decode {

namespace {

// Thrown from the per-batch callback when *stop asks the stream to stop.
struct StopRequested {};

}  // namespace

StreamEnd translate_stream(const Translator& translator, io::LineSource& input, const ChunkOptions& chunks,
                           bool with_words, TranslationWriter& writer, io::Progress& progress,
                           const std::atomic<int>* stop, GuideReader* guides) {
  const auto stop_requested = [stop] { return stop != nullptr && stop->load() != 0; };
  try {
    ChunkPrefetcher prefetcher(input, chunks, translator_encoder(translator, with_words), guides);
    while (std::optional<Chunk> chunk = prefetcher.next()) {
      if (stop_requested()) throw StopRequested{};  // e.g. while the model was loading
      writer.count_replaced_lines(chunk->replaced_lines);
      const std::int64_t chunk_start = writer.totals().lines;
      writer.start_chunk(with_words ? &chunk->words : nullptr);
      translator.translate_ids_in_batches(
          std::move(chunk->sources),
          [&](const std::vector<Translation>& results, std::int64_t done) {
            writer.write_ready(results);
            progress.update(chunk_start + done);
            if (stop_requested()) throw StopRequested{};
          },
          std::move(chunk->guides));
    }
    if (stop_requested()) throw StopRequested{};  // a stop while waiting for input
  } catch (const StopRequested&) {
    progress.finish();
    return StreamEnd::kStopped;
  }
  progress.finish();
  return StreamEnd::kDone;
}

void log_translation_summary(const TranslationTotals& totals, double seconds, std::int64_t max_positions,
                             const Device& device) {
  seconds = std::max(seconds, 1e-9);
  spdlog::info(
      "translate: {} lines, {} source tokens, {} target tokens (1-best) in {:.2f} s: {:.1f} lines/s, {:.0f} "
      "source tokens/s, {:.0f} target tokens/s",
      totals.lines, totals.source_tokens, totals.target_tokens, seconds, static_cast<double>(totals.lines) / seconds,
      static_cast<double>(totals.source_tokens) / seconds, static_cast<double>(totals.target_tokens) / seconds);
  const AllocatorStats memory = allocator_for(device).stats();
  spdlog::debug("translate: {} allocator: peak in use {} MiB, peak reserved {} MiB, {} system allocations, {} frees",
                device.str(), memory.peak_in_use >> 20, memory.peak_reserved >> 20, memory.system_allocations,
                memory.system_frees);
  if (totals.truncated > 0) {
    spdlog::warn("translate: {} line(s) longer than {} tokens were truncated", totals.truncated, max_positions);
  }
  if (totals.replaced_lines > 0) {
    spdlog::warn("translate: {} line(s) had invalid UTF-8, replaced with U+FFFD", totals.replaced_lines);
  }
}

}  // namespace dragoman::decode
