// Device memory for the CUDA caching allocator and tensor copies. Plain C++ interface (no CUDA
// headers), so core/ can call it from .cpp files.
#pragma once

#include <cstddef>

namespace dragoman::cuda {

// cudaMalloc on `device`; nullptr when the device is out of memory (other errors throw).
void* device_malloc(int device, std::size_t bytes);
void device_free(int device, void* block);

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };
// Synchronous copy of `bytes` bytes; `device` is the device of the device-side pointer(s).
void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, int device);

}  // namespace dragoman::cuda
