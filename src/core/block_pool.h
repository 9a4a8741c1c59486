// The bookkeeping of the caching allocators (core/allocator.h), free of CUDA so that CPU tests
// check it with a fake system allocator. Memory comes from the system in segments; a segment is
// split into blocks, a freed block merges with its free neighbours, and a segment goes back to the
// system only when release_cached() is called (empty_cache, a system allocation that failed, or the
// CPU allocator's bound on its cache).
// So a training loop whose shapes vary from batch to batch stops calling cudaMalloc once its
// largest batch has been seen, and never calls cudaFree (which synchronises the whole device).
//
// Stream order: every segment belongs to the stream it was first allocated for, and a free block
// is handed out only for that stream. Work on one stream runs in issue order, so a block freed on
// the host while a kernel on that stream still reads it can be reused at once by the next
// allocation for the stream: its kernels run after. (A block used on a second stream would need an
// event before reuse; nothing does that yet: a device has one stream, device/cuda/context.h.)
//
// Sizes: requests up to 1 MiB come from 2 MiB segments ("small" pool), larger ones from 20 MiB
// segments below 10 MiB and otherwise from a segment of their own size rounded to 2 MiB ("large"
// pool, so small blocks do not fragment large segments). A block is split when the rest would be at
// least 512 bytes (small) or more than 1 MiB (large); otherwise the request gets the whole block.
// Not thread-safe: CachingAllocator locks around it.
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <unordered_map>

namespace dragoman {

class BlockPool {
 public:
  using SystemAllocate = std::function<void*(std::size_t)>;  // nullptr when out of memory
  using SystemFree = std::function<void(void*)>;

  BlockPool(SystemAllocate system_allocate, SystemFree system_free);
  // Frees the Block records; never calls the system (the caller releases the cache first).
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // A block of at least `size` bytes (a multiple of 512) for work on `stream`; sets *block_size to
  // its size. nullptr when the system has no memory left even after the cache was released.
  void* allocate(std::size_t size, const void* stream, std::size_t* block_size);
  // Returns a block in use to the pool; its size, or 0 when `ptr` is not a block in use or is
  // smaller than `at_least` bytes (then nothing changes).
  std::size_t deallocate(void* ptr, std::size_t at_least = 0);
  // Gives every segment without a block in use back to the system; the bytes given back.
  std::size_t release_cached();

  std::size_t reserved() const { return reserved_; }  // bytes in segments
  std::size_t segments() const { return segments_; }
  std::size_t system_allocations() const { return system_allocations_; }
  std::size_t system_frees() const { return system_frees_; }

  static constexpr std::size_t kSmallRequest = std::size_t{1} << 20;  // small pool up to this
  static constexpr std::size_t kSmallSegment = std::size_t{2} << 20;
  static constexpr std::size_t kLargeSegment = std::size_t{20} << 20;  // for requests < kMediumRequest
  static constexpr std::size_t kMediumRequest = std::size_t{10} << 20;
  static constexpr std::size_t kSegmentStep = std::size_t{2} << 20;  // larger requests round to this
  static constexpr std::size_t kMinSplit = 512;                      // smallest block left by a split

  // The segment size a request of `size` bytes allocates.
  static std::size_t segment_size(std::size_t size);

 private:
  struct Block {
    char* ptr;
    std::size_t size;
    const void* stream;
    bool small;
    bool in_use = false;
    Block* prev = nullptr;  // neighbours inside the same segment
    Block* next = nullptr;
  };
  struct Order {  // free blocks by (stream, size, address): best fit for a stream is lower_bound
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeSet = std::set<Block*, Order>;

  FreeSet& pool_of(bool small) { return small ? small_free_ : large_free_; }
  Block* take_free(std::size_t size, const void* stream, bool small);
  Block* new_segment(std::size_t size, const void* stream, bool small);

  SystemAllocate system_allocate_;
  SystemFree system_free_;
  FreeSet small_free_, large_free_;
  std::unordered_map<void*, Block*> in_use_;
  std::size_t reserved_ = 0, segments_ = 0, system_allocations_ = 0, system_frees_ = 0;
};

}  // namespace dragoman
