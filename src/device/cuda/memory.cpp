// Device memory, copies and memsets (see memory.h). A CUDA-only .cpp: part of dragoman_cuda.
#include "device/cuda/memory.h"

#include "device/cuda/check.h"
#include "device/cuda/context.h"

namespace dragoman::cuda {

void* device_malloc(int device, std::size_t bytes) {
  const DeviceGuard guard(device);
  void* block = nullptr;
  const cudaError_t status = cudaMalloc(&block, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // an out-of-memory error is not sticky: clear it for the next calls
    return nullptr;
  }
  DRAGOMAN_CUDA_CHECK(status);
  return block;
}

void device_free(int device, void* block) {
  const DeviceGuard guard(device);
  DRAGOMAN_CUDA_CHECK(cudaFree(block));
}

void* pinned_malloc(std::size_t bytes) {
  void* block = nullptr;
  DRAGOMAN_CUDA_CHECK(cudaHostAlloc(&block, bytes, cudaHostAllocPortable));
  return block;
}

void pinned_free(void* block) { DRAGOMAN_CUDA_CHECK(cudaFreeHost(block)); }

void copy_async(void* dst, const void* src, std::size_t bytes, Stream stream) {
  if (bytes == 0) return;
  DRAGOMAN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
}

void copy_2d_async(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
                   std::size_t height, Stream stream) {
  if (width == 0 || height == 0) return;
  DRAGOMAN_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDefault, stream));
}

void copy_peer_async(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes, Stream stream) {
  if (bytes == 0) return;
  DRAGOMAN_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, stream));
}

void memset_async(void* dst, int value, std::size_t bytes, Stream stream) {
  if (bytes == 0) return;
  DRAGOMAN_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, stream));
}

void stream_synchronize(Stream stream) { DRAGOMAN_CUDA_CHECK(cudaStreamSynchronize(stream)); }

}  // namespace dragoman::cuda
