// PinnedBuffer: page-locked host memory that grows on demand and is reused, for asynchronous
// host <-> device copies (a batch's ids uploaded while the previous batch computes; results read
// back without the driver's staging copy). Plain C++ header; in the CPU-only build reserve() throws
// "this build has no CUDA".
//
// The buffer does not track copies: before the host writes to memory that an issued copy still
// reads (or reads memory a copy writes), it synchronizes that copy's stream; and it must not
// reserve() more (which frees the old memory) while a copy is in flight.
#pragma once

#include <cstddef>

namespace dragoman::cuda {

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes) { reserve(bytes); }
  // Frees the memory; never throws (a CUDA error is kept for rethrow_deferred_error()).
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  // Makes room for at least `bytes` bytes. Keeps the memory if it is large enough; otherwise frees
  // it and allocates anew (the contents are not kept). Grows by at least half, so a slowly growing
  // size reallocates O(log n) times.
  void reserve(std::size_t bytes);

  void* data() const { return data_; }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data_);
  }
  std::size_t capacity() const { return capacity_; }

 private:
  void release() noexcept;

  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace dragoman::cuda
