// The CUDA runtime, cuBLAS and NCCL are linked and answer on a real GPU.
#include <catch2/catch.hpp>

#include "device/cuda/check.h"
#include "device/cuda/runtime_info.h"
#include "ops/build_info.h"

TEST_CASE("runtime_info lists every device", "[cuda]") {
  const int devices = dragoman::cuda::device_count();
  REQUIRE(devices > 0);
  const std::string info = dragoman::cuda::runtime_info();
  CHECK(info.find("CUDA devices: " + std::to_string(devices)) != std::string::npos);
  CHECK(info.find("cuda:0 ") != std::string::npos);
  CHECK(dragoman::ops::build_info().find("CUDA: yes") != std::string::npos);
}

TEST_CASE("a failing CUDA call throws dragoman::Error naming the call", "[cuda]") {
  void* ptr = nullptr;
  // More memory than any GPU has: cudaMalloc fails with an out-of-memory error.
  const auto allocate_too_much = [&] { DRAGOMAN_CUDA_CHECK(cudaMalloc(&ptr, std::size_t{1} << 60)); };
  REQUIRE_THROWS_WITH(allocate_too_much(), Catch::Contains("cudaMalloc") && Catch::Contains("test_runtime_info.cpp"));
  cudaGetLastError();
}

TEST_CASE("a cuBLAS handle can be created and destroyed", "[cuda]") {
  cublasHandle_t handle = nullptr;
  DRAGOMAN_CUBLAS_CHECK(cublasCreate(&handle));
  REQUIRE(handle != nullptr);
  DRAGOMAN_CUBLAS_CHECK(cublasDestroy(handle));
}
