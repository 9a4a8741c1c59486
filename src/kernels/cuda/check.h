// Error checking for every CUDA runtime, cuBLAS and NCCL call: DRAGOMAN_CUDA_CHECK(call) and
// friends throw dragoman::Error naming the call, the library's error string, file and line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "core/error.h"

namespace dragoman::cuda {

[[noreturn]] void throw_cuda_error(const char* call, const std::string& what, const char* file, int line);

}  // namespace dragoman::cuda

#define DRAGOMAN_CUDA_CHECK(call)                                                                          \
  do {                                                                                                     \
    const cudaError_t dragoman_status_ = (call);                                                           \
    if (dragoman_status_ != cudaSuccess) {                                                                 \
      ::dragoman::cuda::throw_cuda_error(#call, cudaGetErrorString(dragoman_status_), __FILE__, __LINE__); \
    }                                                                                                      \
  } while (0)

#define DRAGOMAN_CUBLAS_CHECK(call)                                                                           \
  do {                                                                                                        \
    const cublasStatus_t dragoman_status_ = (call);                                                           \
    if (dragoman_status_ != CUBLAS_STATUS_SUCCESS) {                                                          \
      ::dragoman::cuda::throw_cuda_error(#call, cublasGetStatusString(dragoman_status_), __FILE__, __LINE__); \
    }                                                                                                         \
  } while (0)

#define DRAGOMAN_NCCL_CHECK(call)                                                                          \
  do {                                                                                                     \
    const ncclResult_t dragoman_status_ = (call);                                                          \
    if (dragoman_status_ != ncclSuccess) {                                                                 \
      ::dragoman::cuda::throw_cuda_error(#call, ncclGetErrorString(dragoman_status_), __FILE__, __LINE__); \
    }                                                                                                      \
  } while (0)
