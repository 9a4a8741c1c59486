// Copies and memsets on the context stream (device/cuda/memory.h) and pinned host buffers
// (device/cuda/pinned.h): byte-exact round trips over awkward sizes, the bytes after every output
// untouched, pitched copies that skip the padding between rows, peer copies with two GPUs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "device/cuda/check.h"
#include "device/cuda/context.h"
#include "device/cuda/deferred_error.h"
#include "device/cuda/memory.h"
#include "device/cuda/pinned.h"
#include "device/cuda/runtime_info.h"

namespace dragoman {
namespace {

constexpr std::size_t kSizes[] = {1, 7, 31, 32, 33, 255, 513, 1025, 37000};
constexpr std::size_t kGuard = 64;  // sentinel bytes after each output
constexpr unsigned char kSentinel = 0x5A;

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>((i * 131 + seed * 7 + i / 251) & 0xFF);
  return bytes;
}

// Device memory freed at the end of a scope (cudaMalloc directly: these tests check the layer
// below the caching allocator).
struct DeviceBytes {
  explicit DeviceBytes(std::size_t n) : size(n) { DRAGOMAN_CUDA_CHECK(cudaMalloc(&data, n)); }
  ~DeviceBytes() { DRAGOMAN_CUDA_CHECK_NOTHROW(cudaFree(data)); }
  unsigned char* get() const { return static_cast<unsigned char*>(data); }
  void* data = nullptr;
  std::size_t size;
};

std::size_t count_mismatches(const std::vector<unsigned char>& got, const std::vector<unsigned char>& expected) {
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (got[i] != expected[i] && mismatches++ < 5) {
      std::printf("mismatch at byte %zu of %zu: %d, expected %d\n", i, expected.size(), got[i], expected[i]);
    }
  }
  return mismatches;
}

}  // namespace

TEST_CASE("copy_async and memset_async round-trip bytes exactly and touch nothing after them", "[cuda]") {
  const cuda::DeviceGuard guard(0);
  const cuda::Stream stream = cuda::stream_of(0);
  for (const std::size_t n : kSizes) {
    INFO("n = " << n);
    const std::vector<unsigned char> host = pattern(n, 1);
    DeviceBytes a(n + kGuard), b(n + kGuard);
    cuda::memset_async(a.get(), kSentinel, n + kGuard, stream);
    cuda::memset_async(b.get(), kSentinel, n + kGuard, stream);
    cuda::copy_async(a.get(), host.data(), n, stream);  // host -> device
    cuda::copy_async(b.get(), a.get(), n, stream);      // device -> device
    std::vector<unsigned char> got(n + kGuard, 0);
    cuda::copy_async(got.data(), b.get(), n + kGuard, stream);  // device -> host
    cuda::stream_synchronize(stream);
    CHECK(count_mismatches(got, host) == 0);
    for (std::size_t i = n; i < n + kGuard; ++i) REQUIRE(got[i] == kSentinel);

    cuda::memset_async(b.get(), 0, n, stream);  // zero the copy, keep the guard bytes
    cuda::copy_async(got.data(), b.get(), n + kGuard, stream);
    cuda::synchronize(0);
    CHECK(count_mismatches(got, std::vector<unsigned char>(n, 0)) == 0);
    for (std::size_t i = n; i < n + kGuard; ++i) REQUIRE(got[i] == kSentinel);
  }
}

TEST_CASE("copy_2d_async copies rows between pitched layouts and leaves the padding alone", "[cuda]") {
  const cuda::DeviceGuard guard(0);
  const cuda::Stream stream = cuda::stream_of(0);
  for (const std::size_t width : {std::size_t{1}, std::size_t{7}, std::size_t{33}, std::size_t{513}}) {
    for (const std::size_t height : {std::size_t{1}, std::size_t{31}, std::size_t{255}}) {
      INFO("width " << width << ", height " << height);
      const std::size_t src_pitch = width + 5, dst_pitch = width + 64;
      const std::vector<unsigned char> src = pattern(src_pitch * height, 2);
      DeviceBytes device(dst_pitch * height + kGuard);
      cuda::memset_async(device.get(), kSentinel, device.size, stream);
      cuda::copy_2d_async(device.get(), dst_pitch, src.data(), src_pitch, width, height, stream);  // host -> device
      std::vector<unsigned char> back(src_pitch * height, 0xEE);  // device -> host, into the source's layout
      cuda::copy_2d_async(back.data(), src_pitch, device.get(), dst_pitch, width, height, stream);
      std::vector<unsigned char> raw(device.size);
      cuda::copy_async(raw.data(), device.get(), raw.size(), stream);
      cuda::stream_synchronize(stream);
      std::vector<unsigned char> expected_back(src_pitch * height, 0xEE), expected_raw(device.size, kSentinel);
      for (std::size_t r = 0; r < height; ++r) {
        for (std::size_t c = 0; c < width; ++c) {
          expected_back[r * src_pitch + c] = src[r * src_pitch + c];
          expected_raw[r * dst_pitch + c] = src[r * src_pitch + c];
        }
      }
      CHECK(count_mismatches(back, expected_back) == 0);
      CHECK(count_mismatches(raw, expected_raw) == 0);  // padding and the bytes after: sentinels
    }
  }
}

TEST_CASE("PinnedBuffer is page-locked, grows, moves, and carries async copies both ways", "[cuda]") {
  cuda::PinnedBuffer up, down;
  CHECK(up.data() == nullptr);
  CHECK(up.capacity() == 0);
  up.reserve(1000);
  REQUIRE(up.data() != nullptr);
  cudaPointerAttributes attributes{};
  DRAGOMAN_CUDA_CHECK(cudaPointerGetAttributes(&attributes, up.data()));
  CHECK(attributes.type == cudaMemoryTypeHost);
  void* first = up.data();
  up.reserve(500);  // fits: the same memory
  CHECK(up.data() == first);
  up.reserve(1001);  // grows by at least half
  CHECK(up.capacity() >= 1500);

  const cuda::DeviceGuard guard(0);
  const cuda::Stream stream = cuda::stream_of(0);
  for (const std::size_t n : kSizes) {
    INFO("n = " << n);
    const std::vector<unsigned char> bytes = pattern(n, 3);
    up.reserve(n);
    down.reserve(n + kGuard);
    std::memcpy(up.data(), bytes.data(), n);
    std::memset(down.data(), kSentinel, n + kGuard);
    DeviceBytes device(n);
    cuda::copy_async(device.get(), up.data(), n, stream);
    cuda::copy_async(down.data(), device.get(), n, stream);
    cuda::stream_synchronize(stream);  // pinned memory: only now are the copies done
    const auto* got = down.data_as<unsigned char>();
    CHECK(count_mismatches(std::vector<unsigned char>(got, got + n + kGuard), bytes) == 0);
    for (std::size_t i = n; i < n + kGuard; ++i) REQUIRE(got[i] == kSentinel);
  }

  cuda::PinnedBuffer moved(std::move(up));
  CHECK(up.data() == nullptr);  // NOLINT(bugprone-use-after-move): a moved-from buffer is empty
  CHECK(moved.capacity() >= kSizes[8]);
  up = std::move(moved);
  CHECK(moved.data() == nullptr);  // NOLINT(bugprone-use-after-move)
  CHECK(up.data() != nullptr);
  CHECK_NOTHROW(cuda::rethrow_deferred_error());
}

TEST_CASE("copy_peer_async copies between two GPUs", "[cuda]") {
  if (cuda::device_count() < 2) {
    WARN("one GPU: the peer copy is not exercised");
    return;
  }
  for (const std::size_t n : kSizes) {
    INFO("n = " << n);
    const std::vector<unsigned char> host = pattern(n, 4);
    std::vector<unsigned char> got(n + kGuard);
    void *on0 = nullptr, *on1 = nullptr;
    {
      const cuda::DeviceGuard guard(0);
      DRAGOMAN_CUDA_CHECK(cudaMalloc(&on0, n));
      cuda::copy_async(on0, host.data(), n, cuda::stream_of(0));
      cuda::synchronize(0);
    }
    {
      const cuda::DeviceGuard guard(1);
      DRAGOMAN_CUDA_CHECK(cudaMalloc(&on1, n + kGuard));
      cuda::memset_async(on1, kSentinel, n + kGuard, cuda::stream_of(1));
      cuda::copy_peer_async(on1, 1, on0, 0, n, cuda::stream_of(1));
      cuda::copy_async(got.data(), on1, n + kGuard, cuda::stream_of(1));
      cuda::synchronize(1);
      DRAGOMAN_CUDA_CHECK(cudaFree(on1));
    }
    DRAGOMAN_CUDA_CHECK(cudaFree(on0));
    CHECK(count_mismatches(got, host) == 0);
    for (std::size_t i = n; i < n + kGuard; ++i) REQUIRE(got[i] == kSentinel);
  }
}

}  // namespace dragoman
