// CUDA uniform_fill equals its CPU spec bit for bit, over awkward sizes and offsets.
#include <catch2/catch.hpp>

#include <cstdio>
#include <vector>

#include "device/cuda/check.h"
#include "device/cuda/context.h"
#include "kernels/random.h"

TEST_CASE("cuda::uniform_fill equals cpu::uniform_fill", "[cuda][random]") {
  const std::size_t sizes[] = {1, 7, 31, 32, 33, 255, 513, 1025, 37000, 65535 * 256 + 3};
  for (std::size_t n : sizes) {
    for (std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{3}, (std::uint64_t{1} << 33) + 1}) {
      INFO("n = " << n << ", offset = " << offset);
      std::vector<float> expected(n);
      dragoman::cpu::uniform_fill(expected.data(), n, 2026, 5, offset);
      float* device = nullptr;
      DRAGOMAN_CUDA_CHECK(cudaMalloc(&device, (n + 1) * sizeof(float)));
      const float sentinel = -1.0f;  // the element after the output must stay untouched
      DRAGOMAN_CUDA_CHECK(cudaMemcpy(device + n, &sentinel, sizeof(float), cudaMemcpyHostToDevice));
      dragoman::cuda::uniform_fill(device, n, 2026, 5, offset, dragoman::cuda::stream_of(0));
      dragoman::cuda::synchronize(0);
      std::vector<float> got(n + 1);
      DRAGOMAN_CUDA_CHECK(cudaMemcpy(got.data(), device, (n + 1) * sizeof(float), cudaMemcpyDeviceToHost));
      DRAGOMAN_CUDA_CHECK(cudaFree(device));
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (got[i] != expected[i] && mismatches++ < 5) {
          std::printf("mismatch at %zu: cuda %.9g cpu %.9g\n", i, got[i], expected[i]);
        }
      }
      CHECK(mismatches == 0);
      CHECK(got[n] == sentinel);
    }
  }
}
