// Caching allocators (see allocator.h).
#include "core/allocator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "base/error.h"
#include "device/cuda/context.h"
#include "device/cuda/deferred_error.h"
#include "device/cuda/memory.h"

namespace dragoman {

SystemMemory SystemMemory::of(Device device) {
  if (device.is_cpu()) {
    return {[](std::size_t bytes) { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); },
            [](void* block) { std::free(block); }};
  }
  if constexpr (kWithCuda) {
    const int index = device.index;
    return {[index](std::size_t bytes) { return cuda::device_malloc(index, bytes); },
            [index](void* block) { cuda::device_free(index, block); }};
  } else {
    throw_no_cuda("memory on " + device.str());
  }
}

CachingAllocator::CachingAllocator(Device device)
    : CachingAllocator(device, device.is_cpu() ? Policy::kBoundedCache : Policy::kSplitSegments,
                       SystemMemory::of(device)) {}

CachingAllocator::CachingAllocator(Device device, Policy policy, SystemMemory memory)
    : device_(device),
      policy_(policy),
      memory_(std::move(memory)),
      pool_(std::make_unique<BlockPool>(memory_.allocate, memory_.free)) {}

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
  std::size_t block_size = size;
  void* block = pool_->allocate(size, stream, &block_size);
  sync_pool_stats();
  if (block == nullptr) {
    throw OutOfMemory("out of memory on " + device_.str() + ": could not allocate " + std::to_string(size) +
                      " bytes (" + std::to_string(stats_.in_use) + " bytes in use)");
  }
  stats_.in_use += block_size;
  if (stats_.in_use > stats_.peak_in_use) stats_.peak_in_use = stats_.in_use;
  if (stats_.reserved > stats_.peak_reserved) stats_.peak_reserved = stats_.reserved;
  return block;
}

void CachingAllocator::deallocate(void* block, std::size_t bytes) noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t size = pool_->deallocate(block, round_size(bytes));
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
  // The CPU's bound: segments with no block in use go back once the cache holds more than the peak
  // in use and more than kCacheFloor (std::free does not throw).
  if (policy_ == Policy::kBoundedCache && stats_.reserved - stats_.in_use > std::max(stats_.peak_in_use, kCacheFloor)) {
    pool_->release_cached();
    sync_pool_stats();
  }
}

void CachingAllocator::sync_pool_stats() {
  stats_.reserved = pool_->reserved();
  stats_.system_allocations = pool_->system_allocations();
  stats_.system_frees = pool_->system_frees();
}

void CachingAllocator::empty_cache() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (kept_error_) throw_kept_error();
  // Update the statistics even when a cudaFree throws halfway (the pool counts before each call).
  struct Sync {
    CachingAllocator& a;
    ~Sync() { a.sync_pool_stats(); }
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
  if constexpr (!kWithCuda) throw Error("cannot allocate on " + device.str() + ": this build has no CUDA");
  const std::lock_guard<std::mutex> lock(g_cuda_allocators_mutex);
  if (CachingAllocator* a = slot.load(std::memory_order_acquire)) return *a;
  auto* a = new CachingAllocator(device);  // never destroyed
  slot.store(a, std::memory_order_release);
  return *a;
}

std::size_t discard_pages(void* data, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + page - 1) / page * page, last = (begin + bytes) / page * page;
  if (last <= first) return 0;
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) {
    throw Error("discard_pages: madvise failed: " + std::string(std::strerror(errno)));
  }
  return last - first;
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
  if constexpr (kWithCuda) attempt([] { cuda::release_contexts(); });
  attempt([] { cuda::rethrow_deferred_error(); });
  if (!first_error.empty()) throw Error(first_error);
}

}  // namespace dragoman
