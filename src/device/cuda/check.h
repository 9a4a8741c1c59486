// Error checking for every CUDA runtime, cuBLAS, cuBLASLt and NCCL call: DRAGOMAN_CUDA_CHECK(call)
// and friends throw dragoman::Error naming the call, the library's error string, file and line.
// In destructors use DRAGOMAN_CUDA_CHECK_NOTHROW: it keeps the error for a later
// rethrow_deferred_error() (deferred_error.h) instead of throwing during unwinding.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "base/error.h"

namespace dragoman::cuda {

[[noreturn]] void throw_cuda_error(const char* call, const std::string& what, const char* file, int line);
// The same message, kept by defer_error() instead of thrown. Never throws.
void defer_cuda_error(const char* call, const char* what, const char* file, int line) noexcept;

}  // namespace dragoman::cuda

#define DRAGOMAN_CUDA_CHECK(call)                                                                          \
  do {                                                                                                     \
    const cudaError_t dragoman_status_ = (call);                                                           \
    if (dragoman_status_ != cudaSuccess) {                                                                 \
      ::dragoman::cuda::throw_cuda_error(#call, cudaGetErrorString(dragoman_status_), __FILE__, __LINE__); \
    }                                                                                                      \
  } while (0)

#define DRAGOMAN_CUDA_CHECK_NOTHROW(call)                                                                  \
  do {                                                                                                     \
    const cudaError_t dragoman_status_ = (call);                                                           \
    if (dragoman_status_ != cudaSuccess) {                                                                 \
      ::dragoman::cuda::defer_cuda_error(#call, cudaGetErrorString(dragoman_status_), __FILE__, __LINE__); \
    }                                                                                                      \
  } while (0)

// cuBLASLt reports cublasStatus_t too, so this macro checks cuBLAS and cuBLASLt calls.
#define DRAGOMAN_CUBLAS_CHECK(call)                                                                             \
  do {                                                                                                          \
    const cublasStatus_t dragoman_status_ = (call);                                                             \
    if (dragoman_status_ != CUBLAS_STATUS_SUCCESS) {                                                            \
      ::dragoman::cuda::throw_cuda_error(#call, cublasLtGetStatusString(dragoman_status_), __FILE__, __LINE__); \
    }                                                                                                           \
  } while (0)

#define DRAGOMAN_NCCL_CHECK(call)                                                                          \
  do {                                                                                                     \
    const ncclResult_t dragoman_status_ = (call);                                                          \
    if (dragoman_status_ != ncclSuccess) {                                                                 \
      ::dragoman::cuda::throw_cuda_error(#call, ncclGetErrorString(dragoman_status_), __FILE__, __LINE__); \
    }                                                                                                      \
  } while (0)
