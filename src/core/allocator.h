// Per-device caching allocators. Freed blocks are kept in a free list and handed out again for a
// request of up to their size (best fit, wasting at most a quarter of the request), so a training
// step that allocates the same activations every step stops calling malloc/cudaMalloc after the
// first one. The cache never holds more than the peak of the bytes in use: batches of varying
// shapes do not make it grow without bound (reserved <= 2 x peak in use). Blocks are 64-byte aligned on the CPU.
// Thread-safe. The statistics are what benchmarks report as memory use.
#pragma once

#include <cstddef>
#include <map>
#include <unordered_map>
#include <mutex>
#include <vector>

#include "core/device.h"

namespace dragoman {

struct AllocatorStats {
  std::size_t in_use = 0;         // bytes handed out and not yet returned (block sizes)
  std::size_t peak_in_use = 0;    // maximum of in_use since the last reset_peak()
  std::size_t reserved = 0;       // bytes obtained from the system (in use + cached)
  std::size_t peak_reserved = 0;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(Device device) : device_(device) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` bytes (never nullptr; 0 bytes gives a valid 1-byte block).
  // Throws dragoman::Error when the device is out of memory.
  void* allocate(std::size_t bytes);
  // Returns a block from allocate() with the same `bytes` (anything else: dragoman::Error).
  void deallocate(void* block, std::size_t bytes);
  // Gives every cached (free) block back to the system.
  void empty_cache();

  AllocatorStats stats() const;
  void reset_peak();
  Device device() const { return device_; }

  // The size a request is rounded up to: 512-byte steps up to 1 MiB, then 128 KiB steps.
  static std::size_t round_size(std::size_t bytes);

 private:
  void* system_allocate(std::size_t bytes);
  void system_free(void* block);

  Device device_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;  // block size -> cached blocks
  std::unordered_map<void*, std::size_t> sizes_;  // blocks in use -> their size
  AllocatorStats stats_;
};

// The allocator of a device (created on first use, lives until the program ends).
CachingAllocator& allocator_for(Device device);

}  // namespace dragoman
