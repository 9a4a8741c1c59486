// The CPU row moves of the decoder's caches (kernels/gather.h): plan_row_moves and move_rows
// reorder rows in place exactly as gather_row_prefixes does into a new buffer, whatever the
// mapping (chains, cycles, repeated and dropped rows), copying only the rows that change and
// saving one row per cycle.
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/gather.h"

namespace dragoman {
namespace {

// Rows of `width` floats, `positions` per row, row r position p element e = r * 1000 + p * 10 + e.
std::vector<float> numbered(std::int64_t rows, std::int64_t positions, std::int64_t width) {
  std::vector<float> data(static_cast<std::size_t>(rows * positions * width));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t p = 0; p < positions; ++p) {
      for (std::int64_t e = 0; e < width; ++e) {
        data[static_cast<std::size_t>((r * positions + p) * width + e)] = static_cast<float>(r * 1000 + p * 10 + e);
      }
    }
  }
  return data;
}

// Moves `rows` in place in two blocks of different widths and checks every kept prefix against
// the gather into a new buffer.
void check_moves(const std::vector<std::int32_t>& rows, std::int64_t old_rows, const std::vector<std::int64_t>& units) {
  const std::int64_t positions = 5, count = static_cast<std::int64_t>(rows.size());
  const cpu::RowMoves moves = cpu::plan_row_moves(rows.data(), count, units.data());
  std::int64_t changed = 0;
  for (std::int64_t i = 0; i < count; ++i) changed += rows[static_cast<std::size_t>(i)] != i;
  CHECK(static_cast<std::int64_t>(moves.copies.size()) == changed);  // rows that stay are not copied
  const std::int64_t widths[] = {3, 2};
  std::vector<std::vector<float>> data, want;
  std::vector<cpu::RowBlock> blocks;
  for (const std::int64_t width : widths) {
    const std::int64_t stride = positions * width * static_cast<std::int64_t>(sizeof(float));
    data.push_back(numbered(std::max(old_rows, count), positions, width));
    want.push_back(data.back());
    std::vector<std::int64_t> bytes;
    for (const std::int64_t u : units) bytes.push_back(u * width * static_cast<std::int64_t>(sizeof(float)));
    cpu::gather_row_prefixes(data.back().data(), stride, want.back().data(), stride, rows.data(), count, bytes.data());
  }
  for (std::size_t b = 0; b < data.size(); ++b) {
    blocks.push_back({data[b].data(), positions * widths[b] * static_cast<std::int64_t>(sizeof(float)),
                      widths[b] * static_cast<std::int64_t>(sizeof(float))});
  }
  cpu::move_rows(moves, blocks);
  for (std::size_t b = 0; b < data.size(); ++b) {
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t kept = units[static_cast<std::size_t>(i)] * widths[b];
      for (std::int64_t e = 0; e < kept; ++e) {
        const auto at = static_cast<std::size_t>(i * positions * widths[b] + e);
        INFO("block " << b << " row " << i << " (from " << rows[static_cast<std::size_t>(i)] << ") element " << e);
        REQUIRE(data[b][at] == want[b][at]);
      }
    }
  }
}

TEST_CASE("plan_row_moves orders chains and saves one row per cycle", "[kernels]") {
  const std::vector<std::int64_t> units(4, 5);
  // A chain (beam 0 extends twice, the others shift): no scratch row.
  std::vector<std::int32_t> chain = {0, 0, 1, 2};
  cpu::RowMoves moves = cpu::plan_row_moves(chain.data(), 4, units.data());
  CHECK(moves.saves.empty());
  CHECK(moves.copies.size() == 3);
  check_moves(chain, 4, units);
  // Two beams trading places: one cycle, one saved row.
  std::vector<std::int32_t> swap = {1, 0, 2, 3};
  moves = cpu::plan_row_moves(swap.data(), 4, units.data());
  CHECK(moves.saves.size() == 1);
  CHECK(moves.copies.size() == 2);
  check_moves(swap, 4, units);
  // Rows with no positions yet (the first step): a swap saves and copies nothing at all.
  check_moves(swap, 4, std::vector<std::int64_t>(4, 0));
  // A 4-cycle and the identity.
  check_moves({1, 2, 3, 0}, 4, units);
  std::vector<std::int32_t> same = {0, 1, 2, 3};
  moves = cpu::plan_row_moves(same.data(), 4, units.data());
  CHECK(moves.copies.empty());
  CHECK(moves.saves.empty());
  // Dropped rows (compaction), and rows taken from beyond the new count.
  check_moves({0, 1, 4, 5}, 8, units);
  check_moves({6, 7, 2, 3}, 8, units);
  // A cycle whose rows are also read by others.
  check_moves({1, 0, 0, 1}, 4, units);
}

TEST_CASE("move_rows in place equals the gather for random reorderings", "[kernels]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const std::int64_t beams = 1 + static_cast<std::int64_t>(rng() % 4);
    const std::int64_t old_sources = 1 + static_cast<std::int64_t>(rng() % 6);
    // Each new source is an old one (kept in order, reordered, repeated or some dropped); each
    // beam a beam of its source, with a bias towards staying in place.
    std::vector<std::int32_t> sources;
    const std::int64_t new_sources = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(old_sources + 1));
    for (std::int64_t j = 0; j < new_sources; ++j) {
      sources.push_back(rng() % 2 == 0 && j < old_sources ? static_cast<std::int32_t>(j)
                                                          : static_cast<std::int32_t>(rng() % old_sources));
    }
    std::vector<std::int32_t> rows;
    std::vector<std::int64_t> units;
    for (std::size_t j = 0; j < sources.size(); ++j) {
      const std::int64_t kept = static_cast<std::int64_t>(rng() % 6);  // positions of this source's rows
      for (std::int64_t k = 0; k < beams; ++k) {
        const std::int64_t beam = rng() % 3 == 0 ? k : static_cast<std::int64_t>(rng() % beams);
        rows.push_back(static_cast<std::int32_t>(sources[j] * beams + beam));
        units.push_back(kept);
      }
    }
    INFO("trial " << trial);
    check_moves(rows, old_sources * beams, units);
  }
}

}  // namespace
}  // namespace dragoman
