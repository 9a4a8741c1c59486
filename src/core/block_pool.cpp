// Segments split into blocks (see block_pool.h).
#include "core/block_pool.h"

#include <functional>
#include <utility>
#include <vector>

namespace dragoman {

bool BlockPool::Order::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return std::less<const void*>()(a->stream, b->stream);
  if (a->size != b->size) return a->size < b->size;
  return std::less<const char*>()(a->ptr, b->ptr);
}

BlockPool::BlockPool(SystemAllocate system_allocate, SystemFree system_free)
    : system_allocate_(std::move(system_allocate)), system_free_(std::move(system_free)) {}

BlockPool::~BlockPool() {
  // Every Block record, free or in use, is reached from its segment's first block.
  std::vector<Block*> firsts;
  for (FreeSet* set : {&small_free_, &large_free_}) {
    for (Block* b : *set) {
      if (b->prev == nullptr) firsts.push_back(b);
    }
  }
  for (const auto& [ptr, b] : in_use_) {
    if (b->prev == nullptr) firsts.push_back(b);
  }
  for (Block* b : firsts) {
    while (b != nullptr) delete std::exchange(b, b->next);
  }
}

std::size_t BlockPool::segment_size(std::size_t size) {
  if (size <= kSmallRequest) return kSmallSegment;
  if (size < kMediumRequest) return kLargeSegment;
  return (size + kSegmentStep - 1) / kSegmentStep * kSegmentStep;
}

BlockPool::Block* BlockPool::take_free(std::size_t size, const void* stream, bool small) {
  FreeSet& pool = pool_of(small);
  Block key{nullptr, size, stream, small};
  const auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

BlockPool::Block* BlockPool::new_segment(std::size_t size, const void* stream, bool small) {
  std::size_t bytes = segment_size(size);
  void* memory = system_allocate_(bytes);
  ++system_allocations_;
  if (memory == nullptr) {  // out of memory: give the cache back, then try the segment and the bare request
    release_cached();
    memory = system_allocate_(bytes);
    ++system_allocations_;
    if (memory == nullptr && bytes > size && !small) {
      bytes = size;
      memory = system_allocate_(bytes);
      ++system_allocations_;
    }
    if (memory == nullptr) return nullptr;
  }
  reserved_ += bytes;
  ++segments_;
  return new Block{static_cast<char*>(memory), bytes, stream, small};
}

void* BlockPool::allocate(std::size_t size, const void* stream, std::size_t* block_size) {
  const bool small = size <= kSmallRequest;
  Block* b = take_free(size, stream, small);
  if (b == nullptr) b = new_segment(size, stream, small);
  if (b == nullptr) return nullptr;
  const std::size_t rest = b->size - size;
  if (small ? rest >= kMinSplit : rest > kSmallRequest) {  // split: the tail stays free
    Block* tail = new Block{b->ptr + size, rest, stream, small};
    tail->prev = b;
    tail->next = b->next;
    if (b->next != nullptr) b->next->prev = tail;
    b->next = tail;
    b->size = size;
    pool_of(small).insert(tail);
  }
  b->in_use = true;
  in_use_.emplace(b->ptr, b);
  *block_size = b->size;
  return b->ptr;
}

std::size_t BlockPool::deallocate(void* ptr, std::size_t at_least) {
  const auto it = in_use_.find(ptr);
  if (it == in_use_.end() || it->second->size < at_least) return 0;
  Block* b = it->second;
  in_use_.erase(it);
  const std::size_t size = b->size;
  b->in_use = false;
  FreeSet& pool = pool_of(b->small);
  // Merge with free neighbours, so that the segment can serve any request up to its size again.
  if (Block* prev = b->prev; prev != nullptr && !prev->in_use) {
    pool.erase(prev);
    prev->size += b->size;
    prev->next = b->next;
    if (b->next != nullptr) b->next->prev = prev;
    delete b;
    b = prev;
  }
  if (Block* next = b->next; next != nullptr && !next->in_use) {
    pool.erase(next);
    b->size += next->size;
    b->next = next->next;
    if (next->next != nullptr) next->next->prev = b;
    delete next;
  }
  pool.insert(b);
  return size;
}

std::size_t BlockPool::release_cached() {
  std::size_t released = 0;
  for (FreeSet* set : {&small_free_, &large_free_}) {
    for (auto it = set->begin(); it != set->end();) {
      Block* b = *it;
      if (b->prev != nullptr || b->next != nullptr) {  // part of a segment that has blocks in use
        ++it;
        continue;
      }
      it = set->erase(it);
      // Counted before the call: a throwing free (a CUDA fault) must not leave the record twice.
      reserved_ -= b->size;
      released += b->size;
      --segments_;
      ++system_frees_;
      void* memory = b->ptr;
      delete b;
      system_free_(memory);
    }
  }
  return released;
}

}  // namespace dragoman
