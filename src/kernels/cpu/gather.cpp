// Row gathers (see gather.h).
#include "kernels/gather.h"

#include <algorithm>
#include <cstring>

namespace dragoman::cpu {

namespace {

// Copies of at least this many bytes in all are shared by the OpenMP threads (the decoder's caches,
// megabytes a step); smaller ones are not worth waking them.
constexpr std::int64_t kParallelBytes = 1 << 18;

}  // namespace

void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes) {
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dst);
#pragma omp parallel for schedule(static) if (count * row_bytes >= kParallelBytes)
  for (std::int64_t i = 0; i < count; ++i) {
    std::memcpy(to + i * dst_stride, from + rows[i] * src_stride, static_cast<std::size_t>(row_bytes));
  }
}

void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, const std::int64_t* row_bytes) {
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dst);
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < count; ++i) total += row_bytes[i];
#pragma omp parallel for schedule(static) if (total >= kParallelBytes)
  for (std::int64_t i = 0; i < count; ++i) {
    std::memcpy(to + i * dst_stride, from + rows[i] * src_stride, static_cast<std::size_t>(row_bytes[i]));
  }
}

RowMoves plan_row_moves(const std::int32_t* rows, std::int64_t count, const std::int64_t* units) {
  RowMoves moves;
  const auto n = static_cast<std::size_t>(count);
  // Destinations to write (rows[i] != i), and for each row i < count the pending copies reading
  // it (they must run before i is overwritten) and the most units any of them needs.
  std::vector<char> pending(n, 0), queued(n, 0);
  std::vector<std::int64_t> readers(n, 0), read_units(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (rows[i] == static_cast<std::int32_t>(i)) continue;
    pending[i] = 1;
    const auto from = static_cast<std::size_t>(rows[i]);
    if (from < n) {
      ++readers[from];
      read_units[from] = std::max(read_units[from], units[i]);
    }
  }
  // Where each old row i < count is read from: itself until a cycle saves it to scratch.
  std::vector<std::int32_t> scratch_of(n, -1);
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (pending[i] && readers[i] == 0) {
      ready.push_back(i);
      queued[i] = 1;
    }
  }
  std::size_t cursor = 0;  // where the search for a cycle goes on
  for (;;) {
    while (!ready.empty()) {
      const std::size_t to = ready.back();
      ready.pop_back();
      const auto from = static_cast<std::size_t>(rows[to]);
      const bool saved = from < n && scratch_of[from] >= 0;
      moves.copies.push_back({static_cast<std::int32_t>(to), saved ? scratch_of[from] : rows[to], saved, units[to]});
      pending[to] = 0;
      if (from < n && --readers[from] == 0 && pending[from] && !queued[from]) {
        ready.push_back(from);
        queued[from] = 1;
      }
    }
    // Every copy left waits for a row that another waiting copy overwrites: a cycle. Save one of
    // its rows, and its readers read the scratch copy.
    while (cursor < n && (!pending[cursor] || queued[cursor])) ++cursor;
    if (cursor == n) break;
    const auto slot = static_cast<std::int32_t>(moves.saves.size());
    moves.saves.push_back({slot, static_cast<std::int32_t>(cursor), false, read_units[cursor]});
    scratch_of[cursor] = slot;
    readers[cursor] = 0;
    ready.push_back(cursor);
    queued[cursor] = 1;
  }
  return moves;
}

void move_rows(const RowMoves& moves, const std::vector<RowBlock>& blocks) {
  if (moves.copies.empty()) return;
  std::int64_t total = 0, most_units = 0;
  for (const auto& copy : moves.copies) total += copy.units;
  for (const auto& save : moves.saves) most_units = std::max(most_units, save.units);
  std::int64_t bytes = 0;
  for (const RowBlock& block : blocks) bytes += total * block.unit_bytes;
  const auto count = static_cast<std::int64_t>(blocks.size());
#pragma omp parallel for schedule(static) if (bytes >= kParallelBytes)
  for (std::int64_t b = 0; b < count; ++b) {
    const RowBlock& block = blocks[static_cast<std::size_t>(b)];
    auto* data = static_cast<unsigned char*>(block.data);
    const std::int64_t row_bytes = most_units * block.unit_bytes;
    std::vector<unsigned char> scratch(static_cast<std::size_t>(row_bytes) * moves.saves.size());
    // (Copies of no positions are skipped: the scratch of rows with none is no buffer at all.)
    for (const auto& save : moves.saves) {
      if (save.units == 0) continue;
      std::memcpy(scratch.data() + save.to * row_bytes, data + save.from * block.stride,
                  static_cast<std::size_t>(save.units * block.unit_bytes));
    }
    for (const auto& copy : moves.copies) {
      if (copy.units == 0) continue;
      const unsigned char* from =
          copy.from_scratch ? scratch.data() + copy.from * row_bytes : data + copy.from * block.stride;
      std::memcpy(data + copy.to * block.stride, from, static_cast<std::size_t>(copy.units * block.unit_bytes));
    }
  }
}

void scatter_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                          const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes) {
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dst);
  for (std::int64_t i = 0; i < count; ++i) {
    std::memcpy(to + rows[i] * dst_stride, from + i * src_stride, static_cast<std::size_t>(row_bytes));
  }
}

}  // namespace dragoman::cpu
