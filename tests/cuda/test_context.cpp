// The execution context of a device: one context per device (the same from every thread), its
// stream is non-blocking and on that device, its cuBLASLt handle and workspace run a matmul (an
// exact one: small integers), DeviceGuard restores the previous device, errors name the call, and
// the NOTHROW check keeps an error for rethrow_deferred_error().
#include <catch2/catch.hpp>

#include <cstring>
#include <thread>
#include <vector>

#include "device/cuda/check.h"
#include "device/cuda/context.h"
#include "device/cuda/deferred_error.h"
#include "device/cuda/memory.h"
#include "device/cuda/runtime_info.h"

namespace dragoman {

TEST_CASE("Each device has one context: a non-blocking stream on it, a cuBLASLt handle, a workspace", "[cuda]") {
  const cuda::Context& c = cuda::context(0);
  CHECK(&c == &cuda::context(0));
  CHECK(c.device == 0);
  REQUIRE(c.stream != nullptr);
  CHECK(cuda::stream_of(0) == c.stream);
  unsigned flags = 0;
  DRAGOMAN_CUDA_CHECK(cudaStreamGetFlags(c.stream, &flags));
  CHECK(flags == cudaStreamNonBlocking);
  int stream_device = -1;
  DRAGOMAN_CUDA_CHECK(cudaStreamGetDevice(c.stream, &stream_device));
  CHECK(stream_device == 0);
  CHECK(c.blaslt != nullptr);
  REQUIRE(c.blaslt_workspace_bytes == cuda::kBlasLtWorkspaceBytes);
  cudaPointerAttributes attributes{};
  DRAGOMAN_CUDA_CHECK(cudaPointerGetAttributes(&attributes, c.blaslt_workspace));
  CHECK(attributes.type == cudaMemoryTypeDevice);
  CHECK(attributes.device == 0);

  // Threads asking at once get the same context.
  std::vector<const cuda::Context*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t) threads.emplace_back([&seen, t] { seen[t] = &cuda::context(0); });
  for (std::thread& thread : threads) thread.join();
  for (const cuda::Context* p : seen) CHECK(p == &c);
  CHECK(cuda::built_with_cuda());
}

TEST_CASE("The context's cuBLASLt handle and workspace compute a matmul on its stream", "[cuda]") {
  // C[m, n] = A[m, k] B[k, n], column-major, small integers: exact in f32 whatever the algorithm.
  const int m = 33, k = 7, n = 31;
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  std::vector<float> expected(static_cast<std::size_t>(m * n), 0.0f);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      for (int p = 0; p < k; ++p) expected[j * m + i] += a[p * m + i] * b[j * k + p];
    }
  }
  const cuda::Context& ctx = cuda::context(0);
  const cuda::DeviceGuard guard(0);
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  DRAGOMAN_CUDA_CHECK(cudaMalloc(&da, a.size() * sizeof(float)));
  DRAGOMAN_CUDA_CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
  DRAGOMAN_CUDA_CHECK(cudaMalloc(&dc, (expected.size() + 1) * sizeof(float)));
  cuda::copy_async(da, a.data(), a.size() * sizeof(float), ctx.stream);
  cuda::copy_async(db, b.data(), b.size() * sizeof(float), ctx.stream);
  cuda::memset_async(dc, 0x7F, (expected.size() + 1) * sizeof(float), ctx.stream);  // sentinel after C

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m));
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k));
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const std::size_t workspace = ctx.blaslt_workspace_bytes;
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &workspace, sizeof workspace));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  DRAGOMAN_CUBLAS_CHECK(
      cublasLtMatmulAlgoGetHeuristic(ctx.blaslt, op, la, lb, lc, lc, preference, 1, &heuristic, &found));
  REQUIRE(found > 0);
  const float alpha = 1.0f, beta = 0.0f;
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatmul(ctx.blaslt, op, &alpha, da, la, db, lb, &beta, dc, lc, dc, lc, &heuristic.algo,
                                       ctx.blaslt_workspace, workspace, ctx.stream));
  std::vector<float> got(expected.size() + 1);
  cuda::copy_async(got.data(), dc, got.size() * sizeof(float), ctx.stream);
  cuda::synchronize(0);
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(preference));
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(lc));
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(lb));
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(la));
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulDescDestroy(op));
  DRAGOMAN_CUDA_CHECK(cudaFree(da));
  DRAGOMAN_CUDA_CHECK(cudaFree(db));
  DRAGOMAN_CUDA_CHECK(cudaFree(dc));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == expected[i]);
  }
  unsigned sentinel = 0;
  std::memcpy(&sentinel, &got[expected.size()], sizeof sentinel);
  CHECK(sentinel == 0x7F7F7F7Fu);
}

TEST_CASE("DeviceGuard makes a device current and restores the previous one", "[cuda]") {
  DRAGOMAN_CUDA_CHECK(cudaSetDevice(0));
  const auto current = [] {
    int d = -1;
    DRAGOMAN_CUDA_CHECK(cudaGetDevice(&d));
    return d;
  };
  {
    const cuda::DeviceGuard guard(0);
    CHECK(current() == 0);
  }
  CHECK(current() == 0);
  const int count = cuda::device_count();
  CHECK_THROWS_WITH(cuda::DeviceGuard(count), Catch::Contains("cudaSetDevice"));
  (void)cudaGetLastError();
  CHECK(current() == 0);
  CHECK_THROWS_WITH(cuda::context(count), Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(cuda::context(-1), Catch::Contains("does not exist"));
  if (count >= 2) {
    {
      const cuda::DeviceGuard guard(1);
      CHECK(current() == 1);
      {
        const cuda::DeviceGuard inner(0);
        CHECK(current() == 0);
      }
      CHECK(current() == 1);
    }
    CHECK(current() == 0);
    const cuda::Context& other = cuda::context(1);  // created under its own guard
    CHECK(current() == 0);
    int stream_device = -1;
    DRAGOMAN_CUDA_CHECK(cudaStreamGetDevice(other.stream, &stream_device));
    CHECK(stream_device == 1);
  }
  CHECK_NOTHROW(cuda::rethrow_deferred_error());
}

TEST_CASE("A failing call in a destructor is kept and rethrown later, naming the call", "[cuda]") {
  // What ~DeviceGuard and ~PinnedBuffer do when CUDA fails: no throw there, the error comes later.
  const auto first = [] { DRAGOMAN_CUDA_CHECK_NOTHROW(cudaSetDevice(-1)); };
  const auto second = [] { DRAGOMAN_CUDA_CHECK_NOTHROW(cudaSetDevice(-2)); };
  CHECK_NOTHROW(first());
  CHECK_NOTHROW(second());  // only the first error is kept
  (void)cudaGetLastError();
  CHECK_THROWS_WITH(cuda::rethrow_deferred_error(), Catch::Contains("cudaSetDevice(-1) failed") &&
                                                        Catch::Contains("test_context.cpp") &&
                                                        Catch::Contains("reported late"));
  CHECK_NOTHROW(cuda::rethrow_deferred_error());
}

}  // namespace dragoman
