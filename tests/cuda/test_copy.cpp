// cuda::copy_strided equals its CPU spec (core/strided_copy.h) byte for byte: transposes, rows
// written into a wider buffer, a 4-D permutation, a strided vector, for element sizes 1, 2, 4 and
// 8 over awkward sizes. The destination buffers start as the same sentinel pattern on both sides
// and are compared whole, so a byte written where it should not be (between rows, after the
// output) is a mismatch.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/strided_copy.h"
#include "device/cuda/check.h"
#include "device/cuda/context.h"
#include "device/cuda/copy.h"
#include "device/cuda/memory.h"

namespace dragoman {
namespace {

struct Case {
  std::string name;
  std::vector<std::int64_t> shape, src_strides, dst_strides;
  std::int64_t src_elements, dst_elements;  // buffer sizes
};

std::vector<Case> cases(std::int64_t n) {
  return {
      {"transpose [n, 3] -> [3, n]", {3, n}, {1, 3}, {n, 1}, 3 * n, 3 * n},
      {"rows of 5 into rows of 9 at column 2", {n, 5}, {5, 1}, {9, 1}, 5 * n, 9 * n + 2},
      {"permute [2, n, 3, 4] -> [2, 3, n, 4]", {2, 3, n, 4}, {n * 12, 4, 12, 1}, {n * 12, n * 4, 4, 1}, 24 * n, 24 * n},
      {"every third element", {n}, {3}, {1}, 3 * n, n},
      {"dense", {n, 2}, {2, 1}, {2, 1}, 2 * n, 2 * n},
  };
}

// Runs both copies on buffers of `elem`-byte elements and compares the destinations byte for byte.
void check_case(const Case& c, std::size_t elem, std::int64_t dst_offset) {
  const auto src_bytes = static_cast<std::size_t>(c.src_elements) * elem;
  const auto dst_bytes = static_cast<std::size_t>(c.dst_elements + dst_offset + 8) * elem;  // + 8 sentinels
  std::vector<unsigned char> src(src_bytes), expected(dst_bytes), got(dst_bytes);
  for (std::size_t i = 0; i < src_bytes; ++i) src[i] = static_cast<unsigned char>((i * 37 + i / 256) & 0xFF);
  for (std::size_t i = 0; i < dst_bytes; ++i) expected[i] = static_cast<unsigned char>(0xA5 ^ (i & 0x3));
  const std::vector<unsigned char> initial = expected;
  const int rank = static_cast<int>(c.shape.size());
  copy_strided(src.data(), c.src_strides.data(), expected.data() + dst_offset * static_cast<std::int64_t>(elem),
               c.dst_strides.data(), c.shape.data(), rank, elem);

  const cuda::DeviceGuard guard(0);
  const cuda::Stream stream = cuda::stream_of(0);
  unsigned char *d_src = nullptr, *d_dst = nullptr;
  DRAGOMAN_CUDA_CHECK(cudaMalloc(&d_src, src_bytes));
  DRAGOMAN_CUDA_CHECK(cudaMalloc(&d_dst, dst_bytes));
  cuda::copy_async(d_src, src.data(), src_bytes, stream);
  cuda::copy_async(d_dst, initial.data(), dst_bytes, stream);
  cuda::copy_strided(d_src, c.src_strides.data(), d_dst + dst_offset * static_cast<std::int64_t>(elem),
                     c.dst_strides.data(), c.shape.data(), rank, elem, stream);
  cuda::copy_async(got.data(), d_dst, dst_bytes, stream);
  cuda::stream_synchronize(stream);
  DRAGOMAN_CUDA_CHECK(cudaFree(d_src));
  DRAGOMAN_CUDA_CHECK(cudaFree(d_dst));
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < dst_bytes; ++i) {
    if (got[i] != expected[i] && mismatches++ < 5) {
      std::printf("%s, elem %zu: byte %zu is %d, expected %d\n", c.name.c_str(), elem, i, got[i], expected[i]);
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("cuda::copy_strided equals copy_strided", "[cuda]") {
  for (const std::int64_t n : {1, 7, 31, 32, 33, 255, 513, 1025, 37000}) {
    for (const Case& c : cases(n)) {
      for (const std::size_t elem : {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{8}}) {
        INFO(c.name << ", n = " << n << ", element size " << elem);
        check_case(c, elem, c.name.find("column 2") != std::string::npos ? 2 : 0);
      }
    }
  }
}

TEST_CASE("cuda::copy_strided refuses too many dimensions and odd element sizes", "[cuda]") {
  const std::vector<std::int64_t> ones(9, 1);
  const cuda::DeviceGuard guard(0);
  CHECK_THROWS_WITH(
      cuda::copy_strided(nullptr, ones.data(), nullptr, ones.data(), ones.data(), 9, 4, cuda::stream_of(0)),
      Catch::Contains("rank 9"));
  CHECK_THROWS_WITH(
      cuda::copy_strided(nullptr, ones.data(), nullptr, ones.data(), ones.data(), 2, 3, cuda::stream_of(0)),
      Catch::Contains("element size 3"));
}

}  // namespace dragoman
