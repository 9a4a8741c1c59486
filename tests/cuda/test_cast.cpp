// CUDA cast equals its CPU spec (kernels/cpu/cast.h) bit for bit, f32 <-> bf16/f16, over awkward
// sizes, with special values (zeros, subnormals, ties, overflow, infinities) among random ones and a
// sentinel after the output.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "device/cuda/cast.h"
#include "device/cuda/check.h"
#include "device/cuda/context.h"
#include "kernels/cpu/cast.h"

namespace dragoman {
namespace {

std::vector<float> test_values(std::size_t n) {
  std::mt19937 rng(2026);
  std::uniform_int_distribution<std::uint32_t> bits;
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            65504.0f,
                            65520.0f,
                            1e5f,
                            std::ldexp(1.0f, -24),
                            std::ldexp(1.0f, -25),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::max(),
                            1.0f + std::ldexp(1.0f, -11)};
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 5 == 0) {
      values[i] = specials[(i / 5) % (sizeof specials / sizeof specials[0])];
    } else {
      std::uint32_t u = bits(rng);
      if ((u & 0x7F800000u) == 0x7F800000u) u &= 0xBFFFFFFFu;  // no NaN: their payload bits are free
      std::memcpy(&values[i], &u, sizeof u);
    }
  }
  return values;
}

// Runs cuda::cast on `in` and compares the bytes of its output with cpu::cast's.
template <typename From, typename To>
void check_cast(const std::vector<From>& in) {
  const std::size_t n = in.size();
  std::vector<To> expected(n);
  cpu::cast(in.data(), expected.data(), n);
  From* d_in = nullptr;
  To* d_out = nullptr;
  DRAGOMAN_CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(From) + 1));
  DRAGOMAN_CUDA_CHECK(cudaMalloc(&d_out, (n + 1) * sizeof(To)));
  DRAGOMAN_CUDA_CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(From), cudaMemcpyHostToDevice));
  DRAGOMAN_CUDA_CHECK(cudaMemset(d_out, 0x5A, (n + 1) * sizeof(To)));  // the sentinel after the output
  DRAGOMAN_CUDA_CHECK(
      cudaDeviceSynchronize());  // the legacy stream's copy and memset, before the context stream's cast
  cuda::cast(d_in, d_out, n, cuda::stream_of(0));  // the context stream, as the ops will use it
  cuda::synchronize(0);
  std::vector<unsigned char> got((n + 1) * sizeof(To));
  DRAGOMAN_CUDA_CHECK(cudaMemcpy(got.data(), d_out, got.size(), cudaMemcpyDeviceToHost));
  DRAGOMAN_CUDA_CHECK(cudaFree(d_in));
  DRAGOMAN_CUDA_CHECK(cudaFree(d_out));
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::memcmp(got.data() + i * sizeof(To), &expected[i], sizeof(To)) != 0 && mismatches++ < 5) {
      std::printf("mismatch at %zu of %zu\n", i, n);
    }
  }
  CHECK(mismatches == 0);
  for (std::size_t b = n * sizeof(To); b < got.size(); ++b) CHECK(got[b] == 0x5A);
}

}  // namespace

TEST_CASE("cuda::cast equals cpu::cast", "[cuda][cast]") {
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{7}, std::size_t{31}, std::size_t{32}, std::size_t{33}, std::size_t{255},
        std::size_t{513}, std::size_t{1025}, std::size_t{37000}, std::size_t{65535 * 256 + 3}}) {
    INFO("n = " << n);
    const std::vector<float> values = test_values(n);
    check_cast<float, bf16>(values);
    check_cast<float, f16>(values);
    std::vector<bf16> as_bf16(n);
    std::vector<f16> as_f16(n);
    cpu::cast(values.data(), as_bf16.data(), n);
    cpu::cast(values.data(), as_f16.data(), n);
    check_cast<bf16, float>(as_bf16);
    check_cast<f16, float>(as_f16);
  }
}

}  // namespace dragoman
