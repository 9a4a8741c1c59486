// Caching allocators (see allocator.h).
#include "core/allocator.h"

#include <cstdlib>
#include <memory>
#include <new>

#include "core/error.h"

#if defined(DRAGOMAN_WITH_CUDA)
#include "kernels/cuda/memory.h"
#endif

namespace dragoman {

CachingAllocator::~CachingAllocator() { empty_cache(); }

std::size_t CachingAllocator::round_size(std::size_t bytes) {
  constexpr std::size_t kSmallStep = 512, kLargeStep = 128 * 1024, kLarge = 1024 * 1024;
  if (bytes == 0) bytes = 1;
  const std::size_t step = bytes <= kLarge ? kSmallStep : kLargeStep;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* block = nullptr;
  std::size_t block_size = size;
  // Best fit among the cached blocks, if it wastes at most a quarter of the request.
  if (const auto it = free_.lower_bound(size); it != free_.end() && it->first <= size + size / 4) {
    block = it->second;
    block_size = it->first;
    free_.erase(it);
  } else {
    block = system_allocate(size);
    if (block == nullptr) {  // give the cache back and try once more before failing
      for (const auto& [cached_size, cached] : free_) {
        system_free(cached);
        stats_.reserved -= cached_size;
      }
      free_.clear();
      block = system_allocate(size);
    }
    if (block == nullptr) {
      throw Error("out of memory on " + device_.str() + ": could not allocate " + std::to_string(size) +
                  " bytes (" + std::to_string(stats_.in_use) + " bytes in use)");
    }
    stats_.reserved += size;
    if (stats_.reserved > stats_.peak_reserved) stats_.peak_reserved = stats_.reserved;
  }
  sizes_[block] = block_size;
  stats_.in_use += block_size;
  if (stats_.in_use > stats_.peak_in_use) stats_.peak_in_use = stats_.in_use;
  return block;
}

void CachingAllocator::deallocate(void* block, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = sizes_.find(block);
  if (it == sizes_.end() || it->second < round_size(bytes)) {
    throw Error("allocator on " + device_.str() + ": deallocate of a block it did not hand out");
  }
  const std::size_t size = it->second;
  sizes_.erase(it);
  stats_.in_use -= size;
  // Cache the block unless the cache would then hold more than the peak in use: shapes that vary
  // from batch to batch must not make the cache grow without bound.
  const std::size_t cached = stats_.reserved - stats_.in_use;
  if (cached > stats_.peak_in_use) {
    system_free(block);
    stats_.reserved -= size;
    return;
  }
  free_.emplace(size, block);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [size, block] : free_) {
    system_free(block);
    stats_.reserved -= size;
  }
  free_.clear();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_in_use = stats_.in_use;
  stats_.peak_reserved = stats_.reserved;
}

void* CachingAllocator::system_allocate(std::size_t bytes) {
  if (device_.is_cpu()) return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
#if defined(DRAGOMAN_WITH_CUDA)
  return cuda::device_malloc(device_.index, bytes);
#else
  throw Error("cannot allocate on " + device_.str() + ": this build has no CUDA");
#endif
}

void CachingAllocator::system_free(void* block) {
  if (device_.is_cpu()) {
    std::free(block);
    return;
  }
#if defined(DRAGOMAN_WITH_CUDA)
  cuda::device_free(device_.index, block);
#endif
}

CachingAllocator& allocator_for(Device device) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::unique_ptr<CachingAllocator>> allocators;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = allocators[{static_cast<int>(device.type), device.index}];
  if (!slot) slot = std::make_unique<CachingAllocator>(device);
  return *slot;
}

}  // namespace dragoman
