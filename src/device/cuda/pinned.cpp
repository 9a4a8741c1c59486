// Pinned host buffers (see pinned.h). A CUDA-only .cpp: part of dragoman_cuda.
#include "device/cuda/pinned.h"

#include <algorithm>
#include <utility>

#include "device/cuda/check.h"
#include "device/cuda/memory.h"

namespace dragoman::cuda {

PinnedBuffer::~PinnedBuffer() { release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void PinnedBuffer::reserve(std::size_t bytes) {
  if (bytes <= capacity_ && data_ != nullptr) return;
  const std::size_t size = std::max({bytes, capacity_ + capacity_ / 2, std::size_t{1}});
  if (data_ != nullptr) {
    void* old = std::exchange(data_, nullptr);
    capacity_ = 0;
    pinned_free(old);
  }
  data_ = pinned_malloc(size);
  capacity_ = size;
}

void PinnedBuffer::release() noexcept {
  if (data_ == nullptr) return;
  DRAGOMAN_CUDA_CHECK_NOTHROW(cudaFreeHost(data_));
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace dragoman::cuda
