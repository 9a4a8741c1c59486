// Caching allocators (see allocator.h).
#include "core/allocator.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/deferred_error.h"
#include "kernels/cuda/memory.h"

namespace dragoman {

SystemMemory SystemMemory::of(Device device) {
  if (device.is_cpu()) {
    return {[](std::size_t bytes) { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); },
            [](void* block) { std::free(block); }};
  }
  const int index = device.index;
  return {[index](std::size_t bytes) { return cuda::device_malloc(index, bytes); },
          [index](void* block) { cuda::device_free(index, block); }};
}

CachingAllocator::CachingAllocator(Device device)
    : CachingAllocator(device, device.is_cpu() ? Policy::kBoundedCache : Policy::kSplitSegments,
                       SystemMemory::of(device)) {}

CachingAllocator::CachingAllocator(Device device, Policy policy, SystemMemory memory)
    : device_(device), policy_(policy), memory_(std::move(memory)) {
  if (policy_ == Policy::kSplitSegments) pool_ = std::make_unique<BlockPool>(memory_.allocate, memory_.free);
}

CachingAllocator::~CachingAllocator() {
  try {
    if (kept_error_) {  // reported later, and the cache is still given back
      cuda::defer_error(*kept_error_);
      kept_error_.reset();
    }
    empty_cache();
  } catch (const std::exception& e) {
    cuda::defer_error(e.what());
  }
}

std::size_t CachingAllocator::round_size(std::size_t bytes) {
  constexpr std::size_t kSmallStep = 512, kLargeStep = 128 * 1024, kLarge = 1024 * 1024;
  if (bytes == 0) bytes = 1;
  const std::size_t step = bytes <= kLarge ? kSmallStep : kLargeStep;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(std::size_t bytes, cuda::Stream stream) {
  const std::size_t size = round_size(bytes);
  const std::lock_guard<std::mutex> lock(mutex_);
  if (kept_error_) throw_kept_error();
  void* block = nullptr;
  std::size_t block_size = size;
  if (policy_ == Policy::kBoundedCache) {
    block = allocate_bounded(size, &block_size);
  } else {
    block = pool_->allocate(size, stream, &block_size);
    stats_.reserved = pool_->reserved();
    stats_.system_allocations = pool_->system_allocations();
    stats_.system_frees = pool_->system_frees();
  }
  if (block == nullptr) {
    throw OutOfMemory("out of memory on " + device_.str() + ": could not allocate " + std::to_string(size) + " bytes (" +
                std::to_string(stats_.in_use) + " bytes in use)");
  }
  stats_.in_use += block_size;
  if (stats_.in_use > stats_.peak_in_use) stats_.peak_in_use = stats_.in_use;
  if (stats_.reserved > stats_.peak_reserved) stats_.peak_reserved = stats_.reserved;
  return block;
}

// Best fit among the cached blocks, if it wastes at most a quarter of the request; nullptr when the
// system is out of memory even after the cache was given back.
void* CachingAllocator::allocate_bounded(std::size_t size, std::size_t* block_size) {
  if (const auto it = free_.lower_bound(size); it != free_.end() && it->first <= size + size / 4) {
    void* block = it->second;
    *block_size = it->first;
    sizes_[block] = it->first;
    free_.erase(it);
    return block;
  }
  void* block = memory_.allocate(size);
  ++stats_.system_allocations;
  if (block == nullptr) {  // give the cache back and try once more before failing
    release_bounded_cache();
    block = memory_.allocate(size);
    ++stats_.system_allocations;
  }
  if (block == nullptr) return nullptr;
  stats_.reserved += size;
  *block_size = size;
  sizes_[block] = size;
  return block;
}

void CachingAllocator::deallocate(void* block, std::size_t bytes) noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::size_t size = 0;
  if (policy_ == Policy::kBoundedCache) {
    const auto it = sizes_.find(block);
    if (it != sizes_.end() && it->second >= round_size(bytes)) {
      size = it->second;
      sizes_.erase(it);
      deallocate_bounded(block, size);
    }
  } else {
    size = pool_->deallocate(block);
  }
  if (size == 0) {
    try {
      if (!kept_error_) {
        kept_error_ = "allocator on " + device_.str() + ": deallocate of a block it did not hand out (" +
                      std::to_string(bytes) + " bytes)";
      }
    } catch (...) {  // no memory for the message: the bad block is still left alone
    }
    return;
  }
  stats_.in_use -= size;
}

void CachingAllocator::deallocate_bounded(void* block, std::size_t size) {
  // Cache the block unless the cache would then hold more than the peak in use: shapes that vary
  // from batch to batch must not make the cache grow without bound.
  const std::size_t cached = stats_.reserved - (stats_.in_use - size);
  if (cached > stats_.peak_in_use) {
    memory_.free(block);
    ++stats_.system_frees;
    stats_.reserved -= size;
    return;
  }
  free_.emplace(size, block);
}

void CachingAllocator::release_bounded_cache() {
  for (const auto& [size, block] : free_) {
    memory_.free(block);
    ++stats_.system_frees;
    stats_.reserved -= size;
  }
  free_.clear();
}

void CachingAllocator::empty_cache() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (kept_error_) throw_kept_error();
  if (policy_ == Policy::kBoundedCache) {
    release_bounded_cache();
    return;
  }
  // Update the statistics even when a cudaFree throws halfway (the pool counts before each call).
  struct Sync {
    CachingAllocator& a;
    ~Sync() {
      a.stats_.reserved = a.pool_->reserved();
      a.stats_.system_frees = a.pool_->system_frees();
    }
  } sync{*this};
  pool_->release_cached();
}

void CachingAllocator::check() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (kept_error_) throw_kept_error();
}

void CachingAllocator::throw_kept_error() {
  std::string message = std::move(*kept_error_);
  kept_error_.reset();
  throw Error(message);
}

AllocatorStats CachingAllocator::stats() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  const std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_in_use = stats_.in_use;
  stats_.peak_reserved = stats_.reserved;
}

namespace {

// CUDA allocators by device index; a slot is written once, under the mutex, and read lock-free.
std::array<std::atomic<CachingAllocator*>, cuda::kMaxDevices> g_cuda_allocators{};
std::mutex g_cuda_allocators_mutex;

}  // namespace

CachingAllocator& allocator_for(Device device) {
  if (device.is_cpu()) {
    static CachingAllocator* const cpu = new CachingAllocator(Device::cpu());  // never destroyed
    return *cpu;
  }
  if (device.index < 0 || device.index >= cuda::kMaxDevices) {
    throw Error("no allocator for " + device.str() + ": CUDA devices are numbered 0 to " +
                std::to_string(cuda::kMaxDevices - 1));
  }
  auto& slot = g_cuda_allocators[static_cast<std::size_t>(device.index)];
  if (CachingAllocator* a = slot.load(std::memory_order_acquire)) return *a;
  if (!cuda::built_with_cuda()) throw Error("cannot allocate on " + device.str() + ": this build has no CUDA");
  const std::lock_guard<std::mutex> lock(g_cuda_allocators_mutex);
  if (CachingAllocator* a = slot.load(std::memory_order_acquire)) return *a;
  auto* a = new CachingAllocator(device);  // never destroyed
  slot.store(a, std::memory_order_release);
  return *a;
}

void release_all() {
  std::string first_error;
  const auto attempt = [&](auto&& step) {
    try {
      step();
    } catch (const std::exception& e) {
      if (first_error.empty()) first_error = e.what();
    }
  };
  std::vector<CachingAllocator*> allocators = {&allocator_for(Device::cpu())};
  for (auto& slot : g_cuda_allocators) {
    if (CachingAllocator* a = slot.load(std::memory_order_acquire)) allocators.push_back(a);
  }
  for (CachingAllocator* a : allocators) {
    attempt([a] { a->check(); });
    attempt([a] { a->empty_cache(); });
  }
  attempt([] { cuda::release_contexts(); });
  attempt([] { cuda::rethrow_deferred_error(); });
  if (!first_error.empty()) throw Error(first_error);
}

}  // namespace dragoman
