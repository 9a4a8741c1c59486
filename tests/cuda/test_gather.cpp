// cuda::gather_row_prefixes (the beam search's reordering of the decoder state) and
// cuda::scatter_row_prefixes (a step's keys and values written at each row's own position) against
// their CPU twins, byte for byte: 4-, 2- and 1-byte words (by alignment), rows repeated, dropped and
// reordered (gather) or scattered out of order with gaps (scatter), prefixes shorter than the row,
// the bytes between the rows written and a sentinel untouched.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/gather.h"
#include "parity_testing.h"

namespace dragoman {

TEST_CASE("cuda gather_row_prefixes equals the CPU twin byte for byte", "[cuda][gather]") {
  std::mt19937 rng(3);
  struct Case {
    std::int64_t src_stride, dst_stride, row_bytes, offset;  // bytes; offset: of both pointers
  };
  for (const Case c : {Case{4096, 4096, 1024, 0}, Case{4096, 2048, 2048, 0}, Case{66, 70, 34, 2}, Case{33, 35, 31, 1},
                       Case{8, 8, 0, 0}}) {
    INFO("src stride " << c.src_stride << ", dst stride " << c.dst_stride << ", row " << c.row_bytes << ", offset "
                       << c.offset);
    const std::int64_t src_rows = 37;
    const std::vector<std::int32_t> rows = {5, 5, 0, 36, 17, 2, 2, 2, 30};
    const auto count = static_cast<std::int64_t>(rows.size());
    std::vector<std::uint8_t> src(static_cast<std::size_t>(src_rows * c.src_stride + c.offset));
    for (std::uint8_t& b : src) b = static_cast<std::uint8_t>(rng());
    const std::size_t dst_bytes = static_cast<std::size_t>(count * c.dst_stride + c.offset);
    std::vector<std::uint8_t> expected(dst_bytes, 0x5A);
    cpu::gather_row_prefixes(src.data() + c.offset, c.src_stride, expected.data() + c.offset, c.dst_stride, rows.data(),
                             count, c.row_bytes);
    test::DeviceBuffer<std::uint8_t> gpu_src(src), gpu_dst(std::vector<std::uint8_t>(dst_bytes, 0x5A));
    test::DeviceBuffer<std::int32_t> gpu_rows(rows);
    cuda::gather_row_prefixes(gpu_src.get() + c.offset, c.src_stride, gpu_dst.get() + c.offset, c.dst_stride,
                              gpu_rows.get(), count, c.row_bytes, test::test_stream());
    CHECK(gpu_dst.download() == expected);
    gpu_dst.check_sentinel();
  }
}

TEST_CASE("cuda scatter_row_prefixes equals the CPU twin byte for byte", "[cuda][gather]") {
  std::mt19937 rng(5);
  struct Case {
    std::int64_t src_stride, dst_stride, row_bytes, offset;  // bytes; offset: of both pointers
  };
  for (const Case c : {Case{1024, 4096, 1024, 0}, Case{2048, 512, 512, 0}, Case{70, 66, 34, 2}, Case{35, 33, 31, 1},
                       Case{8, 8, 0, 0}}) {
    INFO("src stride " << c.src_stride << ", dst stride " << c.dst_stride << ", row " << c.row_bytes << ", offset "
                       << c.offset);
    const std::int64_t dst_rows = 41;
    const std::vector<std::int32_t> rows = {40, 3, 0, 17, 18, 9, 2, 33};  // distinct, unordered, with gaps
    const auto count = static_cast<std::int64_t>(rows.size());
    std::vector<std::uint8_t> src(static_cast<std::size_t>(count * c.src_stride + c.offset));
    for (std::uint8_t& b : src) b = static_cast<std::uint8_t>(rng());
    const std::size_t dst_bytes = static_cast<std::size_t>(dst_rows * c.dst_stride + c.offset);
    std::vector<std::uint8_t> expected(dst_bytes, 0x5A);
    cpu::scatter_row_prefixes(src.data() + c.offset, c.src_stride, expected.data() + c.offset, c.dst_stride,
                              rows.data(), count, c.row_bytes);
    test::DeviceBuffer<std::uint8_t> gpu_src(src), gpu_dst(std::vector<std::uint8_t>(dst_bytes, 0x5A));
    test::DeviceBuffer<std::int32_t> gpu_rows(rows);
    cuda::scatter_row_prefixes(gpu_src.get() + c.offset, c.src_stride, gpu_dst.get() + c.offset, c.dst_stride,
                               gpu_rows.get(), count, c.row_bytes, test::test_stream());
    CHECK(gpu_dst.download() == expected);
    gpu_dst.check_sentinel();
  }
}

}  // namespace dragoman
