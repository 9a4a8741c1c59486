// The caching allocators. Both keep memory in a BlockPool (core/block_pool.h), device-independent
// bookkeeping checked here on a fake system allocator: segments split into blocks and merged again,
// no system call in steady state, reuse only on the same stream, the out-of-memory retry. The CPU
// policy (kBoundedCache): 64-byte aligned blocks, a freed block serving requests of other sizes, a
// cache bounded by the peak in use. Both: size rounding, statistics, deallocate never throws (the
// error comes from the next call), a destructor never throws, release_all(), threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "core/allocator.h"
#include "device/cuda/context.h"
#include "device/cuda/deferred_error.h"

namespace dragoman {
namespace {

constexpr std::size_t kKiB = 1024, kMiB = 1024 * 1024;

// A system allocator with a capacity that counts what it hands out; free may be told to fail.
struct FakeSystem {
  std::size_t capacity = SIZE_MAX;
  std::size_t used = 0;
  bool fail_free = false;
  std::map<void*, std::size_t> live;

  ~FakeSystem() {
    for (const auto& [p, bytes] : live) std::free(p);
  }
  SystemMemory memory() {
    return {[this](std::size_t bytes) -> void* {
              if (bytes > capacity - used) return nullptr;
              void* p = std::malloc(bytes);
              live[p] = bytes;
              used += bytes;
              return p;
            },
            [this](void* p) {
              if (fail_free) throw Error("fake cudaFree failed: an illegal memory access was encountered");
              used -= live.at(p);
              live.erase(p);
              std::free(p);
            }};
  }
};

// Streams are only compared, never used: any distinct addresses do.
cuda::Stream fake_stream(std::uintptr_t n) { return reinterpret_cast<cuda::Stream>(n * 64); }

char* as_bytes(void* p) { return static_cast<char*>(p); }

}  // namespace

TEST_CASE("CachingAllocator round_size uses 512-byte then 128 KiB steps", "[core]") {
  CHECK(CachingAllocator::round_size(0) == 512);
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size(1000) == 1024);
  CHECK(CachingAllocator::round_size(kMiB - 1) == kMiB);
  CHECK(CachingAllocator::round_size(kMiB) == kMiB);
  CHECK(CachingAllocator::round_size(kMiB + 1) == kMiB + 128 * kKiB);
  CHECK(CachingAllocator::round_size(kMiB + 128 * kKiB) == kMiB + 128 * kKiB);
  CHECK(CachingAllocator::round_size(3 * kMiB + 5) == 3 * kMiB + 128 * kKiB);
}

TEST_CASE("The CPU allocator hands out aligned blocks from segments it keeps, and keeps statistics", "[core]") {
  CachingAllocator alloc(Device::cpu());
  CHECK(alloc.device() == Device::cpu());
  CHECK(alloc.policy() == CachingAllocator::Policy::kBoundedCache);
  void* a = alloc.allocate(1000);  // 1024 bytes of a 2 MiB segment
  REQUIRE(a != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 64 == 0);
  AllocatorStats s = alloc.stats();
  CHECK(s.in_use == 1024);
  CHECK(s.reserved == 2 * kMiB);
  CHECK(s.peak_in_use == 1024);
  CHECK(s.system_allocations == 1);

  alloc.deallocate(a, 1000);
  s = alloc.stats();
  CHECK(s.in_use == 0);
  CHECK(s.reserved == 2 * kMiB);  // cached, not given back
  CHECK(s.peak_in_use == 1024);

  void* b = alloc.allocate(1500);  // 1536 bytes
  void* c = alloc.allocate(600);   // 1024 bytes: both from the same segment
  CHECK(reinterpret_cast<std::uintptr_t>(b) % 64 == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(c) % 64 == 0);
  s = alloc.stats();
  CHECK(s.in_use == 1536 + 1024);
  CHECK(s.reserved == 2 * kMiB);
  CHECK(s.peak_in_use == 1536 + 1024);
  CHECK(s.system_allocations == 1);

  alloc.deallocate(b, 1500);
  alloc.deallocate(c, 600);
  alloc.reset_peak();
  s = alloc.stats();
  CHECK(s.in_use == 0);
  CHECK(s.peak_in_use == 0);
  CHECK(s.peak_reserved == 2 * kMiB);

  void* z = alloc.allocate(0);  // a valid block of the smallest size
  CHECK(z != nullptr);
  CHECK(alloc.stats().in_use == 512);
  CHECK(alloc.stats().peak_in_use == 512);
  alloc.empty_cache();  // the segment holds a block in use: it stays
  CHECK(alloc.stats().reserved == 2 * kMiB);
  alloc.deallocate(z, 0);
  alloc.empty_cache();
  s = alloc.stats();
  CHECK(s.reserved == 0);
  CHECK(s.in_use == 0);
  CHECK(s.system_frees == 1);
}

TEST_CASE("The CPU allocator serves a request of another size from a freed block", "[core]") {
  // A batch's 40 MiB block, then the next batch's 16 and 20 MiB: no new memory from the system
  // (fresh memory costs a page fault per 4 KiB page when first written).
  FakeSystem system;
  CachingAllocator alloc(Device::cpu(), CachingAllocator::Policy::kBoundedCache, system.memory());
  void* a = alloc.allocate(40 * kMiB);
  alloc.deallocate(a, 40 * kMiB);
  void* b = alloc.allocate(16 * kMiB);
  void* c = alloc.allocate(20 * kMiB);
  CHECK(b == a);
  CHECK(as_bytes(c) == as_bytes(a) + 16 * kMiB);
  AllocatorStats s = alloc.stats();
  CHECK(s.system_allocations == 1);
  CHECK(s.reserved == 40 * kMiB);
  CHECK(s.in_use == 36 * kMiB);
  alloc.deallocate(b, 16 * kMiB);
  alloc.deallocate(c, 20 * kMiB);
  void* d = alloc.allocate(40 * kMiB);  // merged again
  CHECK(d == a);
  alloc.deallocate(d, 40 * kMiB);
  CHECK(alloc.stats().system_allocations == 1);
  CHECK(alloc.stats().system_frees == 0);
  alloc.empty_cache();
  CHECK(system.live.empty());
}

TEST_CASE("The CPU allocator's cache stays within the peak in use when sizes keep growing", "[core]") {
  FakeSystem system;
  CachingAllocator alloc(Device::cpu(), CachingAllocator::Policy::kBoundedCache, system.memory());
  // Batches of ever larger shapes: two live blocks at a time, every size new and larger than any
  // cached block, so every step needs new segments.
  for (std::size_t step = 0; step < 200; ++step) {
    const std::size_t x = kMiB + step * 256 * kKiB, y = 2 * kMiB + step * 384 * kKiB;
    void* p = alloc.allocate(x);
    void* q = alloc.allocate(y);
    alloc.deallocate(p, x);
    alloc.deallocate(q, y);
    const AllocatorStats s = alloc.stats();
    CHECK(s.in_use == 0);
    CHECK(s.reserved <= 2 * s.peak_in_use + CachingAllocator::kCacheFloor);
    CHECK(system.used == s.reserved);
  }
  // Without the bound the cache would hold every size: about 20 GiB here.
  CHECK(alloc.stats().reserved < 256 * kMiB + CachingAllocator::kCacheFloor);
  CHECK(alloc.stats().system_frees > 0);
  // CUDA's policy keeps its segments (cudaFree synchronises the device).
  FakeSystem device;
  CachingAllocator gpu(Device::cuda(0), CachingAllocator::Policy::kSplitSegments, device.memory());
  for (const std::size_t bytes : {11 * kMiB, 13 * kMiB, 15 * kMiB}) gpu.deallocate(gpu.allocate(bytes), bytes);
  CHECK(gpu.stats().reserved == 12 * kMiB + 14 * kMiB + 16 * kMiB);
  CHECK(gpu.stats().system_frees == 0);
  gpu.empty_cache();
}

TEST_CASE("Split segments: small blocks share a 2 MiB segment and merge back when freed", "[core]") {
  FakeSystem system;
  CachingAllocator alloc(Device::cuda(0), CachingAllocator::Policy::kSplitSegments, system.memory());
  const cuda::Stream s = fake_stream(1);
  void* a = alloc.allocate(1000, s);         // 1024 bytes
  void* b = alloc.allocate(3000, s);         // 3072
  void* c = alloc.allocate(1, s);            // 512
  CHECK(as_bytes(b) == as_bytes(a) + 1024);  // split off one segment, back to back
  CHECK(as_bytes(c) == as_bytes(b) + 3072);
  AllocatorStats st = alloc.stats();
  CHECK(st.system_allocations == 1);
  CHECK(st.reserved == 2 * kMiB);
  CHECK(st.in_use == 1024 + 3072 + 512);

  alloc.deallocate(b, 3000);
  void* d = alloc.allocate(2000, s);  // best fit: b's 3072-byte block, not the segment's tail
  CHECK(d == b);
  CHECK(alloc.stats().in_use == 1024 + 2048 + 512);
  alloc.deallocate(a, 1000);
  alloc.deallocate(c, 1);
  alloc.deallocate(d, 2000);
  st = alloc.stats();
  CHECK(st.in_use == 0);
  CHECK(st.peak_in_use == 1024 + 3072 + 512);
  CHECK(st.system_frees == 0);            // freeing never goes to the system
  void* whole = alloc.allocate(kMiB, s);  // the blocks merged: the segment's start serves 1 MiB
  CHECK(whole == a);
  alloc.deallocate(whole, kMiB);
  alloc.empty_cache();  // one whole free segment: one system free
  st = alloc.stats();
  CHECK(st.system_frees == 1);
  CHECK(st.reserved == 0);
  CHECK(system.live.empty());
}

TEST_CASE("Split segments: large requests share 20 MiB segments, very large ones get their own", "[core]") {
  FakeSystem system;
  CachingAllocator alloc(Device::cuda(0), CachingAllocator::Policy::kSplitSegments, system.memory());
  const cuda::Stream s = fake_stream(1);
  void* a = alloc.allocate(3 * kMiB, s);
  void* b = alloc.allocate(4 * kMiB, s);
  CHECK(as_bytes(b) == as_bytes(a) + 3 * kMiB);
  CHECK(alloc.stats().reserved == 20 * kMiB);
  void* c = alloc.allocate(14 * kMiB + 5, s);  // 14 MiB + 128 KiB > the 13 MiB left: a 16 MiB segment
  CHECK(alloc.stats().reserved == 36 * kMiB);
  CHECK(alloc.stats().in_use == 7 * kMiB + 14 * kMiB + 128 * kKiB);  // the 1.875 MiB rest was split off
  alloc.deallocate(c, 14 * kMiB + 5);
  void* d = alloc.allocate(11 * kMiB, s);  // best fit: the 13 MiB tail of the first segment
  CHECK(as_bytes(d) == as_bytes(b) + 4 * kMiB);
  CHECK(alloc.stats().in_use == 7 * kMiB + 11 * kMiB);  // the 2 MiB rest is split off (more than 1 MiB)
  void* e = alloc.allocate(15 * kMiB, s);               // the 16 MiB segment again; its 1 MiB rest is not split off
  CHECK(e == c);
  CHECK(alloc.stats().in_use == 7 * kMiB + 11 * kMiB + 16 * kMiB);
  CHECK(alloc.stats().system_allocations == 2);
  for (auto [p, n] : {std::pair{a, 3 * kMiB}, {b, 4 * kMiB}, {d, 11 * kMiB}, {e, 15 * kMiB}}) alloc.deallocate(p, n);
  alloc.empty_cache();
  CHECK(alloc.stats().reserved == 0);
  CHECK(alloc.stats().system_frees == 2);
}

TEST_CASE("Split segments: batches of varying shapes make no system call after the largest one", "[core]") {
  FakeSystem system;
  CachingAllocator alloc(Device::cuda(0), CachingAllocator::Policy::kSplitSegments, system.memory());
  const cuda::Stream s = fake_stream(1);
  // One "training step" of a batch of L tokens: activations of a few sizes, all alive until the end
  // of the step, freed in an order unlike their allocation (as a backward pass frees them).
  const auto step = [&](std::size_t L) {
    const std::size_t D = 512, F = 2048, V = 8000;
    const std::size_t sizes[] = {L * D * 4, L * F * 4, L * V * 4, L * L * 8 * 4, L * 4, 8 * L * 4, L * D * 4, 64};
    std::vector<std::pair<void*, std::size_t>> live;
    for (int layer = 0; layer < 3; ++layer) {
      for (const std::size_t n : sizes) live.emplace_back(alloc.allocate(n, s), n);
    }
    for (std::size_t i = 0; i < live.size(); i += 2) alloc.deallocate(live[i].first, live[i].second);
    for (std::size_t i = 1; i < live.size(); i += 2) alloc.deallocate(live[i].first, live[i].second);
  };
  step(120);  // the largest batch first
  const AllocatorStats warm = alloc.stats();
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::size_t> length(1, 120);
  for (int i = 0; i < 300; ++i) step(length(rng));
  const AllocatorStats st = alloc.stats();
  CHECK(st.system_allocations == warm.system_allocations);
  CHECK(st.system_frees == 0);
  CHECK(st.reserved == warm.reserved);
  CHECK(st.in_use == 0);
}

TEST_CASE("Split segments: a freed block is reused only for its own stream", "[core]") {
  FakeSystem system;
  CachingAllocator alloc(Device::cuda(0), CachingAllocator::Policy::kSplitSegments, system.memory());
  void* a = alloc.allocate(4096, fake_stream(1));
  alloc.deallocate(a, 4096);
  void* b = alloc.allocate(4096, fake_stream(2));  // another stream: a segment of its own
  CHECK(b != a);
  CHECK(alloc.stats().system_allocations == 2);
  void* c = alloc.allocate(4096, fake_stream(1));
  CHECK(c == a);
  alloc.deallocate(b, 4096);
  alloc.deallocate(c, 4096);
}

TEST_CASE("Split segments: out of memory releases the cache and retries, then fails clearly", "[core]") {
  FakeSystem system;
  system.capacity = 24 * kMiB;
  CachingAllocator alloc(Device::cuda(0), CachingAllocator::Policy::kSplitSegments, system.memory());
  const cuda::Stream s = fake_stream(1);
  void* a = alloc.allocate(12 * kMiB, s);  // a segment of its own
  alloc.deallocate(a, 12 * kMiB);
  void* b = alloc.allocate(16 * kMiB, s);  // 12 + 16 > 24: the cached segment goes back first
  CHECK(alloc.stats().system_frees == 1);
  CHECK(alloc.stats().reserved == 16 * kMiB);
  void* c = alloc.allocate(2 * kMiB, s);  // a 20 MiB segment does not fit, the bare 2 MiB does
  CHECK(alloc.stats().reserved == 18 * kMiB);
  CHECK_THROWS_WITH(alloc.allocate(8 * kMiB, s), Catch::Contains("out of memory on cuda:0") &&
                                                     Catch::Contains(std::to_string(18 * kMiB) + " bytes in use"));
  CHECK(alloc.stats().in_use == 18 * kMiB);
  alloc.deallocate(b, 16 * kMiB);
  alloc.deallocate(c, 2 * kMiB);
}

TEST_CASE("deallocate never throws: a bad block is reported by the allocator's next call", "[core]") {
  for (const auto policy : {CachingAllocator::Policy::kBoundedCache, CachingAllocator::Policy::kSplitSegments}) {
    FakeSystem system;
    CachingAllocator alloc(Device::cpu(), policy, system.memory());
    void* a = alloc.allocate(100);
    int not_a_block = 0;
    CHECK_NOTHROW(alloc.deallocate(&not_a_block, 16));
    CHECK_THROWS_WITH(alloc.allocate(100), Catch::Contains("deallocate of a block it did not hand out"));
    CHECK_NOTHROW(alloc.check());  // reported once
    alloc.deallocate(a, 100);
    CHECK(alloc.stats().in_use == 0);
    CHECK_NOTHROW(alloc.deallocate(a, 100));  // twice: kept for check()
    CHECK_THROWS_WITH(alloc.check(), Catch::Contains("did not hand out"));
    void* c = alloc.allocate(100);
    CHECK_NOTHROW(alloc.deallocate(c, 4096));  // a larger size than it was allocated with
    CHECK_THROWS_WITH(alloc.check(), Catch::Contains("did not hand out (4096 bytes)"));
    CHECK(alloc.stats().in_use == 512);  // left alone
    alloc.deallocate(c, 100);
    void* b = alloc.allocate(100);  // usable again
    alloc.deallocate(b, 100);
  }
}

// Storage's destructor calls deallocate: a throw there would end the process during unwinding.
static_assert(noexcept(std::declval<CachingAllocator&>().deallocate(nullptr, 0)));

TEST_CASE("An allocator's destructor never throws: a failing free is reported later", "[core]") {
  FakeSystem system;
  {
    CachingAllocator alloc(Device::cuda(0), CachingAllocator::Policy::kSplitSegments, system.memory());
    void* a = alloc.allocate(100, fake_stream(1));
    alloc.deallocate(a, 100);
    system.fail_free = true;  // as after a sticky CUDA fault
  }                           // the destructor's empty_cache fails
  CHECK_THROWS_WITH(cuda::rethrow_deferred_error(), Catch::Contains("fake cudaFree failed"));
  CHECK_NOTHROW(cuda::rethrow_deferred_error());  // reported once
  system.fail_free = false;
}

TEST_CASE("discard_pages gives back the whole pages inside a range: they read as zeros, the rest is kept", "[core]") {
  CachingAllocator& cpu = allocator_for(Device::cpu());
  const std::size_t bytes = 64 * kKiB;
  auto* block = static_cast<unsigned char*>(cpu.allocate(bytes));
  std::fill(block, block + bytes, static_cast<unsigned char>(0xab));
  // From byte 100 to 100 bytes before the end: the whole pages inside it, not the edges.
  const std::size_t given = discard_pages(block + 100, bytes - 200);
  const auto page = static_cast<std::size_t>(4096);
  CHECK(given % page == 0);
  CHECK(given >= bytes - 2 * page - 200);
  CHECK(given <= bytes - 200);
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    if (i < 100 || i >= bytes - 100) REQUIRE(block[i] == 0xab);
    zeros += block[i] == 0 ? 1 : 0;
  }
  CHECK(zeros == given);
  CHECK(discard_pages(block + 1, 100) == 0);  // no whole page inside
  cpu.deallocate(block, bytes);
}

TEST_CASE("release_all gives the CPU cache back and the allocator keeps working", "[core]") {
  CachingAllocator& cpu = allocator_for(Device::cpu());
  void* a = cpu.allocate(10 * kKiB);
  cpu.deallocate(a, 10 * kKiB);
  CHECK(cpu.stats().reserved >= 10 * kKiB);
  const std::size_t in_use = cpu.stats().in_use;
  release_all();
  CHECK(cpu.stats().reserved == in_use);  // only what live tensors hold
  void* b = cpu.allocate(10 * kKiB);
  cpu.deallocate(b, 10 * kKiB);
}

TEST_CASE("The CPU allocator serves several threads", "[core]") {
  CachingAllocator& cpu = allocator_for(Device::cpu());
  const std::size_t before = cpu.stats().in_use;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      CachingAllocator& a = allocator_for(Device::cpu());
      for (int i = 0; i < 2000; ++i) {
        const std::size_t n = 512 * static_cast<std::size_t>(1 + (i + t) % 7);
        void* p = a.allocate(n);
        static_cast<char*>(p)[n - 1] = 1;
        a.deallocate(p, n);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(cpu.stats().in_use == before);
  CHECK_THROWS_WITH(allocator_for(Device::cuda(cuda::kMaxDevices)), Catch::Contains("numbered 0 to 63"));
}

}  // namespace dragoman
