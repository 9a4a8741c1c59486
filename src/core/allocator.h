// Per-device caching allocators: every Tensor's storage comes from one, and their statistics are
// what benchmarks, bench-model and translate report as memory use.
//
// Both devices keep their memory in a BlockPool (core/block_pool.h): segments from the system split
// into blocks, merged again when freed, so that a block freed by one batch serves the next batch's
// requests of other sizes and a loop whose shapes vary stops calling the system once its largest
// batch has been seen. Blocks are 64-byte aligned on the CPU.
//
// CPU (policy kBoundedCache): the cache never holds more than the peak of the bytes in use (or 64
// MiB, kCacheFloor): when a free leaves more cached than that, the segments with nothing in use go
// back to the system (reserved <= 2 x peak in use + 64 MiB). Fresh pages cost a page fault each,
// so this matters for speed as well as memory: translating with whole blocks cached per size (the
// earlier policy) touched about 2 GiB of fresh pages for 300 lines of the base model
// (docs/PERFORMANCE.md).
//
// CUDA (policy kSplitSegments): nothing goes back to the driver in steady state (cudaFree
// synchronises the device), only from empty_cache() or when a cudaMalloc fails. Blocks are reused in
// stream order.
//
// Thread-safe: one mutex per allocator, and allocator_for() takes no lock once a device's allocator
// exists. deallocate() never throws (Storage's destructor calls it, and a throw during unwinding
// would end the process before main could print the first error): a bad deallocate is kept and
// thrown by the allocator's next allocate(), empty_cache() or check(). Allocators live until the
// process ends; release_all() gives their caches and the CUDA contexts back before exit.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/block_pool.h"
#include "device/cuda/stream.h"
#include "device/device.h"

namespace dragoman {

struct AllocatorStats {
  std::size_t in_use = 0;       // bytes handed out and not yet returned (block sizes)
  std::size_t peak_in_use = 0;  // maximum of in_use since the last reset_peak()
  std::size_t reserved = 0;     // bytes obtained from the system (in use + cached)
  std::size_t peak_reserved = 0;
  std::size_t system_allocations = 0;  // calls to the system allocator (malloc, cudaMalloc) so far
  std::size_t system_frees = 0;        // calls to the system's free (free, cudaFree) so far
};

// Where an allocator's memory comes from: the device's system allocator, or a fake in tests.
struct SystemMemory {
  std::function<void*(std::size_t)> allocate;  // nullptr when out of memory; other errors throw
  std::function<void(void*)> free;
  static SystemMemory of(Device device);  // aligned_alloc/free, or cudaMalloc/cudaFree on the device
};

class CachingAllocator {
 public:
  enum class Policy {
    kBoundedCache,   // split segments, cache bounded by the peak in use (the CPU)
    kSplitSegments,  // split segments per stream, never freed in steady state (CUDA)
  };

  // The device's system memory and its policy (CPU: kBoundedCache, CUDA: kSplitSegments).
  explicit CachingAllocator(Device device);
  CachingAllocator(Device device, Policy policy, SystemMemory memory);
  // Gives the cache back; never throws (an error is kept for cuda::rethrow_deferred_error()).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` bytes (never nullptr; 0 bytes gives a valid block) for work on
  // `stream` (CUDA; ignored on the CPU). Throws dragoman::OutOfMemory when the device is out of memory, or
  // the error a previous deallocate() kept.
  void* allocate(std::size_t bytes, cuda::Stream stream = nullptr);
  // Returns a block from allocate() with the same `bytes`. Never throws: anything else (a block it
  // did not hand out, a smaller size) is kept and thrown by the next allocate(), empty_cache() or
  // check(); the block is then left alone.
  void deallocate(void* block, std::size_t bytes) noexcept;
  // Gives every cached (free) block back to the system.
  void empty_cache();
  // Throws the error a deallocate() kept, if any.
  void check();

  AllocatorStats stats() const;
  void reset_peak();
  Device device() const { return device_; }
  Policy policy() const { return policy_; }

  // The size a request is rounded up to: 512-byte steps up to 1 MiB, then 128 KiB steps.
  static std::size_t round_size(std::size_t bytes);
  // kBoundedCache keeps this much cache whatever the peak in use: a few of the pool's segments,
  // which are larger than small programs' blocks.
  static constexpr std::size_t kCacheFloor = std::size_t{64} << 20;

 private:
  void sync_pool_stats();   // reserved and system calls from the pool, with mutex_ held
  void throw_kept_error();  // with mutex_ held

  Device device_;
  Policy policy_;
  SystemMemory memory_;
  mutable std::mutex mutex_;
  AllocatorStats stats_;
  std::optional<std::string> kept_error_;
  std::unique_ptr<BlockPool> pool_;
};

// The allocator of a device: created on first use, never destroyed (no allocator work during static
// destruction, when the CUDA runtime may be unloading). Lock-free once created. CUDA devices
// 0 .. cuda::kMaxDevices - 1; in a CPU-only build a CUDA device is an error.
CachingAllocator& allocator_for(Device device);

// CPU memory that will not be read again, though its block stays in use (a decoding model's f32
// weights once only packed or int8 copies are read): the whole pages inside [data, data + bytes)
// go back to the system (madvise MADV_DONTNEED) and read as zeros afterwards. Returns the bytes
// given back (0 where the range holds no whole page).
std::size_t discard_pages(void* data, std::size_t bytes);

// Before the program exits, with no tensor in use any more: checks every allocator for a kept
// error, gives every cache back to the system, destroys the CUDA contexts (device/cuda/context.h)
// and throws the first error found on the way (a deferred CUDA error included), after releasing
// everything it could. main calls it, so that a CUDA fault reaches the user as an error message.
void release_all();

}  // namespace dragoman
