// ops::gather_row_prefixes, scatter_row_prefixes and move_rows_in_place (the decoder state's row
// copies; kernels/gather.h: the CPU spec and its CUDA twin): one body per op case
// (device and dtype), against plain loops over the rows' bytes, with rows that repeat, drop and
// trade places, prefixes shorter than a row, and sentinels in the bytes nobody may write.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/tensor.h"
#include "ops/gather.h"
#include "ops/op_testing.h"

namespace dragoman {
namespace {

constexpr std::uint8_t kSentinel = 0xA5;

// The bytes of a CPU copy of t.
std::vector<std::uint8_t> bytes_of(const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  const auto* p = static_cast<const std::uint8_t*>(host.raw_data());
  return {p, p + host.nbytes()};
}

// A [rows, width] tensor of the case's dtype and device whose bytes are all kSentinel.
Tensor sentinel_rows(std::int64_t rows, std::int64_t width, const test::OpCase& c) {
  Tensor host = Tensor::empty({rows, width}, c.dtype, Device::cpu());
  std::memset(host.raw_data(), kSentinel, host.nbytes());
  return host.to(c.device);
}

}  // namespace

TEST_CASE("ops::gather_row_prefixes and scatter_row_prefixes copy row prefixes on every op case", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const std::int64_t rows = 5, width = 7;
      const auto element = static_cast<std::int64_t>(dtype_size(c.dtype));
      const Tensor src = test::from_doubles(test::random_doubles(rows * width, 1), {rows, width}, c.dtype, c.device);
      const std::vector<std::uint8_t> src_bytes = bytes_of(src);
      const std::int64_t stride = width * element;

      // Rows repeat (2), drop (0, 4) and reorder; three of seven elements of each row are copied.
      const std::vector<std::int32_t> index = {3, 1, 1, 2};
      const std::int64_t prefix = 3 * element;
      Tensor out = sentinel_rows(static_cast<std::int64_t>(index.size()), width, c);
      ops::gather_row_prefixes(src, stride, out, stride, index, prefix);
      std::vector<std::uint8_t> expected(static_cast<std::size_t>(out.nbytes()), kSentinel);
      for (std::size_t i = 0; i < index.size(); ++i) {
        std::memcpy(&expected[i * stride], &src_bytes[static_cast<std::size_t>(index[i] * stride)], prefix);
      }
      CHECK(bytes_of(out) == expected);

      // The same rows with the indices already on the device (a caller gathering several tensors).
      Tensor again = sentinel_rows(static_cast<std::int64_t>(index.size()), width, c);
      const Tensor on_device = Tensor::from_vector(index, {static_cast<std::int64_t>(index.size())}).to(c.device);
      ops::gather_row_prefixes(src, stride, again, stride, index, prefix, on_device);
      CHECK(bytes_of(again) == expected);

      // The reverse: row index[i] of the output gets row i's prefix (distinct rows).
      const std::vector<std::int32_t> targets = {4, 0, 2};
      Tensor scattered = sentinel_rows(rows, width, c);
      ops::scatter_row_prefixes(src, stride, scattered, stride, targets, prefix);
      std::vector<std::uint8_t> scattered_expected(static_cast<std::size_t>(scattered.nbytes()), kSentinel);
      for (std::size_t i = 0; i < targets.size(); ++i) {
        std::memcpy(&scattered_expected[static_cast<std::size_t>(targets[i] * stride)], &src_bytes[i * stride], prefix);
      }
      CHECK(bytes_of(scattered) == scattered_expected);

      if (c.device.is_cpu()) {
        // Each output row its own prefix (the CPU decoder's caches of sources of different lengths).
        const std::vector<std::int64_t> own = {0, element, 7 * element, 2 * element};
        Tensor per_row = sentinel_rows(static_cast<std::int64_t>(index.size()), width, c);
        ops::gather_row_prefixes(src, stride, per_row, stride, index, own);
        std::vector<std::uint8_t> per_row_expected(static_cast<std::size_t>(per_row.nbytes()), kSentinel);
        for (std::size_t i = 0; i < index.size(); ++i) {
          std::memcpy(&per_row_expected[i * stride], &src_bytes[static_cast<std::size_t>(index[i] * stride)],
                      static_cast<std::size_t>(own[i]));
        }
        CHECK(bytes_of(per_row) == per_row_expected);
      }
    }
  }
}

// In place on CPU memory only (the CPU decoder's caches).
DRAGOMAN_CPU_TEST_CASE("ops::move_rows_in_place reorders every block like a gather into new tensors", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const std::int64_t rows = 6, width = 5;
      const auto element = static_cast<std::int64_t>(dtype_size(c.dtype));
      // Two beams trade places (0 <-> 1: a cycle, through scratch), row 2 stays, row 5 is repeated
      // and rows 3 and 4 are dropped; each new row keeps its first units[i] positions.
      const std::vector<std::int32_t> index = {1, 0, 2, 5, 5};
      const std::vector<std::int64_t> units = {5, 3, 5, 5, 1};
      std::vector<Tensor> blocks_data;
      std::vector<std::vector<std::uint8_t>> before;
      std::vector<ops::RowBlock> blocks;
      for (std::uint64_t b = 0; b < 2; ++b) {  // two caches, one reordering
        blocks_data.push_back(test::from_doubles(test::random_doubles(rows * width, 10 + b), {rows, width}, c.dtype,
                                                 Device::cpu()));
        before.push_back(bytes_of(blocks_data.back()));
        blocks.push_back({blocks_data.back().raw_data(), width * element, element});
      }
      ops::move_rows_in_place(index, units, blocks);
      for (std::size_t b = 0; b < blocks_data.size(); ++b) {
        const std::vector<std::uint8_t> after = bytes_of(blocks_data[b]);
        for (std::size_t i = 0; i < index.size(); ++i) {
          const auto kept = static_cast<std::size_t>(units[i] * element);
          const std::size_t to = i * static_cast<std::size_t>(width * element);
          const auto from = static_cast<std::size_t>(index[i] * width * element);
          INFO("block " << b << ", row " << i);
          CHECK(std::vector<std::uint8_t>(after.begin() + to, after.begin() + to + kept) ==
                std::vector<std::uint8_t>(before[b].begin() + from, before[b].begin() + from + kept));
        }
      }
    }
  }
}

}  // namespace dragoman
