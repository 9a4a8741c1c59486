// Device memory (see memory.h).
#include "kernels/cuda/memory.h"

#include "kernels/cuda/check.h"

namespace dragoman::cuda {

void* device_malloc(int device, std::size_t bytes) {
  DRAGOMAN_CUDA_CHECK(cudaSetDevice(device));
  void* block = nullptr;
  const cudaError_t status = cudaMalloc(&block, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls do not see it
    return nullptr;
  }
  DRAGOMAN_CUDA_CHECK(status);
  return block;
}

void device_free(int device, void* block) {
  DRAGOMAN_CUDA_CHECK(cudaSetDevice(device));
  DRAGOMAN_CUDA_CHECK(cudaFree(block));
}

void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, int device) {
  DRAGOMAN_CUDA_CHECK(cudaSetDevice(device));
  const cudaMemcpyKind k = kind == CopyKind::kHostToDevice   ? cudaMemcpyHostToDevice
                           : kind == CopyKind::kDeviceToHost ? cudaMemcpyDeviceToHost
                                                             : cudaMemcpyDeviceToDevice;
  DRAGOMAN_CUDA_CHECK(cudaMemcpy(dst, src, bytes, k));
}

}  // namespace dragoman::cuda
