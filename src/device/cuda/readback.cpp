// Readbacks of device memory (see readback.h). A CUDA-only .cpp: part of dragoman_cuda.
#include "device/cuda/readback.h"

#include <cuda_runtime.h>

#include <exception>
#include <string>

#include "device/cuda/check.h"
#include "device/cuda/context.h"
#include "device/cuda/deferred_error.h"
#include "device/cuda/memory.h"

namespace dragoman::cuda {

Readback::~Readback() {
  if (event_ == nullptr) return;
  try {  // (a DeviceGuard throws after a sticky CUDA fault; a destructor must not)
    const DeviceGuard guard(device_);
    DRAGOMAN_CUDA_CHECK_NOTHROW(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));  // before host_ is freed
    DRAGOMAN_CUDA_CHECK_NOTHROW(cudaEventDestroy(static_cast<cudaEvent_t>(event_)));
  } catch (const std::exception& e) {
    defer_error(std::string("cuda::Readback: ") + e.what());
  }
}

void Readback::start(const void* src, std::size_t bytes, int device) {
  if (pending_) wait();  // the host buffer is about to be written again
  const DeviceGuard guard(device);
  if (event_ != nullptr && device != device_) {
    const DeviceGuard old(device_);
    DRAGOMAN_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(event_)));
    event_ = nullptr;
  }
  if (event_ == nullptr) {
    cudaEvent_t event = nullptr;
    DRAGOMAN_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    event_ = event;
    device_ = device;
  }
  host_.reserve(bytes);
  const Stream stream = stream_of(device);
  copy_async(host_.data(), src, bytes, stream);
  DRAGOMAN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), stream));
  pending_ = true;
}

const void* Readback::wait() {
  if (pending_) {
    const DeviceGuard guard(device_);
    DRAGOMAN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));
    pending_ = false;
  }
  return host_.data();
}

}  // namespace dragoman::cuda
