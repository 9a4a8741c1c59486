// Device and pinned host memory, copies and memsets: the CUDA runtime calls under the caching
// allocator (core/allocator.h) and Tensor's copies (core/tensor.cpp). Plain C++ interface (no CUDA
// headers), so core/ includes it in every build and calls it only inside `if constexpr (kWithCuda)`.
//
// Asynchronous means: issued to `stream` and ordered with the other work on it; the host must
// synchronize the stream (synchronize() in context.h, or stream_synchronize) before it reads what a
// copy wrote to host memory, and before it reuses pinned host memory a copy reads. Copies from or
// to pageable host memory are staged by the driver and return once the host memory is no longer
// needed (device -> pageable host: once the copy is done), but the stream still must be
// synchronized before host code relies on device results in other places. The caller holds a
// DeviceGuard for the stream's device where a function says so.
#pragma once

#include <cstddef>

#include "device/cuda/stream.h"

namespace dragoman::cuda {

// cudaMalloc on `device` (current device restored afterwards); nullptr when the device is out of
// memory, other errors throw.
void* device_malloc(int device, std::size_t bytes);
// cudaFree on `device` (current device restored afterwards). Synchronises the device: the
// caching allocator calls it only from empty_cache() and when a cudaMalloc failed.
void device_free(int device, void* block);

// Page-locked host memory (cudaHostAlloc, portable to every device): copies from and to it are
// truly asynchronous. Expensive to allocate: keep and reuse buffers (PinnedBuffer, pinned.h).
void* pinned_malloc(std::size_t bytes);
void pinned_free(void* block);

// `bytes` bytes from src to dst, either of them on the host or on a device of the stream's
// context (the direction follows from the pointers: unified addressing).
void copy_async(void* dst, const void* src, std::size_t bytes, Stream stream);
// `height` rows of `width` bytes; rows start every `dst_pitch` / `src_pitch` bytes (pitch >= width,
// pitch < 2^31). Host or device memory on either side, as copy_async.
void copy_2d_async(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
                   std::size_t height, Stream stream);
// Between two devices (through NVLink/PCIe peer access when enabled, else staged by the driver);
// issued to `stream`, which belongs to one of them.
void copy_peer_async(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes, Stream stream);
// Sets `bytes` bytes at dst (device memory) to `value`.
void memset_async(void* dst, int value, std::size_t bytes, Stream stream);
// Waits until everything issued to `stream` has finished.
void stream_synchronize(Stream stream);

}  // namespace dragoman::cuda
