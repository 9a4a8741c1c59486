// Readback: a few bytes of device memory brought to the host without stopping the device's stream.
// start() queues their copy into page-locked host memory, then an event, on the device's context
// stream; wait() waits for that event alone, not for the work queued after it. The trainer reads an
// update's gradient norm this way, one update late, so that no update waits for the host
// (train/trainer.cpp). Plain C++ header; in the CPU-only build start() throws "this build has no
// CUDA".
#pragma once

#include <cstddef>

#include "device/cuda/pinned.h"

namespace dragoman::cuda {

class Readback {
 public:
  Readback() = default;
  // Destroys the event; never throws (a CUDA error is kept for rethrow_deferred_error()).
  ~Readback();
  Readback(const Readback&) = delete;
  Readback& operator=(const Readback&) = delete;

  // Queues the copy of `bytes` bytes at `src` (device memory of `device`) and an event after it on
  // the device's context stream. A read still pending is waited for first.
  void start(const void* src, std::size_t bytes, int device);
  // Waits for the copy started last, then returns its bytes (valid until the next start()).
  const void* wait();

 private:
  PinnedBuffer host_;
  void* event_ = nullptr;  // cudaEvent_t, made on the first start()
  int device_ = -1;
  bool pending_ = false;
};

}  // namespace dragoman::cuda
