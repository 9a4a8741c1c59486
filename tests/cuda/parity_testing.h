// What the CUDA parity tests of the op families share (test_ops_*.cpp): device buffers with
// sentinels after their data, and (tests/kernels/comparisons.h, which needs no CUDA) random inputs
// of a storage type from fixed seeds and comparisons of a CUDA kernel's output with its CPU spec's,
// bit for bit or within a stated tolerance, printing the first mismatches.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "base/numeric.h"
#include "device/cuda/check.h"
#include "device/cuda/context.h"
#include "kernels/comparisons.h"

namespace dragoman::test {

// Sizes that catch off-by-one blocking, warp and block tails (and a vocabulary-sized row).
inline const std::vector<std::int64_t>& parity_sizes() {
  static const std::vector<std::int64_t> sizes = {1, 7, 31, 32, 33, 255, 513, 1025, 32000};
  return sizes;
}

inline cuda::Stream test_stream() { return cuda::stream_of(0); }

// Device memory for n elements of T followed by kSentinel sentinel elements (bytes 0x5A), on
// device 0. The data part is uploaded or zero; check_sentinel() checks the tail is untouched.
template <typename T>
class DeviceBuffer {
 public:
  static constexpr std::size_t kSentinel = 64;

  explicit DeviceBuffer(std::size_t n) : n_(n) {
    DRAGOMAN_CUDA_CHECK(cudaMalloc(&data_, (n_ + kSentinel) * sizeof(T)));
    DRAGOMAN_CUDA_CHECK(cudaMemset(data_, 0x5A, (n_ + kSentinel) * sizeof(T)));
    // cudaMemset and a pageable cudaMemcpy run on the legacy default stream, which the context's
    // non-blocking stream does not wait for: finish them before a kernel under test is launched.
    DRAGOMAN_CUDA_CHECK(cudaDeviceSynchronize());
  }
  explicit DeviceBuffer(const std::vector<T>& values) : DeviceBuffer(values.size()) { upload(values); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() { return data_; }
  void upload(const std::vector<T>& values) {
    REQUIRE(values.size() == n_);
    DRAGOMAN_CUDA_CHECK(cudaMemcpy(data_, values.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
    DRAGOMAN_CUDA_CHECK(cudaDeviceSynchronize());
  }
  // The data part, after the context stream's work.
  std::vector<T> download() const {
    cuda::synchronize(0);
    std::vector<T> values(n_);
    DRAGOMAN_CUDA_CHECK(cudaMemcpy(values.data(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return values;
  }
  void check_sentinel() const {
    cuda::synchronize(0);
    std::vector<unsigned char> tail(kSentinel * sizeof(T));
    DRAGOMAN_CUDA_CHECK(cudaMemcpy(tail.data(), data_ + n_, tail.size(), cudaMemcpyDeviceToHost));
    std::size_t bad = 0;
    for (const unsigned char b : tail) bad += b != 0x5A;
    CHECK(bad == 0);
  }

 private:
  std::size_t n_;
  T* data_ = nullptr;
};

}  // namespace dragoman::test
