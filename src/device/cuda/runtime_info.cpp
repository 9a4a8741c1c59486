// CUDA library versions and devices (see runtime_info.h). A CUDA-only .cpp: part of dragoman_cuda.
#include "device/cuda/runtime_info.h"

#include <cstdio>

#include "device/cuda/check.h"

namespace dragoman::cuda {
namespace {

std::string dotted(int version) {  // CUDA's 1000 * major + 10 * minor
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// cudaGetDeviceCount's status, `count` 0 on an error (which is cleared: the sticky "no driver").
cudaError_t query_device_count(int& count) {
  count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  return status;
}

}  // namespace

int device_count() {
  int count = 0;
  query_device_count(count);
  return count;
}

std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = query_device_count(count);
  if (status != cudaSuccess) return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
  return count > 0 ? std::string() : std::string("no CUDA device");
}

std::string runtime_info() {
  int runtime = 0;
  int driver = 0;
  DRAGOMAN_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  int nccl = 0;
  DRAGOMAN_NCCL_CHECK(ncclGetVersion(&nccl));
  const int devices = device_count();
  // cuBLAS is loaded on first use (cublas_loader.cpp): its version is read only where there is a
  // device to use it on, so that --version on a machine without a GPU does not load it.
  std::string cublas = "cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + "." + std::to_string(CUBLAS_VER_MINOR) + "." +
                       std::to_string(CUBLAS_VER_PATCH) + " (built with; loaded when a CUDA device is used)";
  if (devices > 0) cublas = "cuBLAS " + cublas_version();
  std::string text = "CUDA: yes (runtime " + dotted(runtime) + ", driver " + (driver > 0 ? dotted(driver) : "none") +
                     "), " + cublas + ", NCCL " + std::to_string(nccl / 10000) + "." +
                     std::to_string((nccl / 100) % 100) + "." + std::to_string(nccl % 100) + "\n";
  text += "CUDA devices: " + std::to_string(devices) + "\n";
  for (int d = 0; d < devices; ++d) {
    cudaDeviceProp prop{};
    DRAGOMAN_CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1 << 30));
    text += "  cuda:" + std::to_string(d) + " " + prop.name + " (sm_" + std::to_string(prop.major) +
            std::to_string(prop.minor) + ", " + memory + ")\n";
  }
  return text;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  DRAGOMAN_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  DRAGOMAN_CUBLAS_CHECK(cublasLtGetProperty(MAJOR_VERSION, &major));
  DRAGOMAN_CUBLAS_CHECK(cublasLtGetProperty(MINOR_VERSION, &minor));
  DRAGOMAN_CUBLAS_CHECK(cublasLtGetProperty(PATCH_LEVEL, &patch));
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace dragoman::cuda
