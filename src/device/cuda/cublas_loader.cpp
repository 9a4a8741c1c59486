// cuBLAS and cuBLASLt, loaded when first called. Loading libcublasLt runs its
// initialisation, which makes about 200 MB resident and takes 0.1 s: a CUDA build's CPU work
// (`translate --device cpu`, `--version` on a machine without a GPU) should not pay that. So
// dragoman_cuda does not link the two libraries; it defines the functions it calls (with the
// toolkit headers' declarations, so a signature that differs from the header's does not compile),
// and each definition opens the library of the toolkit's major version with dlopen on its first
// call and forwards to the library's own function. A library that cannot be loaded is a
// dragoman::Error naming it and dlerror()'s reason. The CUDA runtime and NCCL stay linked: they
// cost about 2 MB each at start-up.
#include <dlfcn.h>

#include <string>

#include "base/error.h"
#include "device/cuda/check.h"

namespace dragoman::cuda {
namespace {

const std::string kMajor = std::to_string(CUBLAS_VER_MAJOR);

// dlopen's handle of `file` (e.g. libcublasLt.so.13), opened once (thread-safe static init).
void* open_library(const std::string& file) {
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    throw Error("cannot load " + file + " (cuBLAS, needed on a CUDA device): " + (why != nullptr ? why : "unknown") +
                " (is the CUDA toolkit's lib64 on LD_LIBRARY_PATH?)");
  }
  return handle;
}

void* cublas_lt() {
  static void* const handle = open_library("libcublasLt.so." + kMajor);
  return handle;
}

void* cublas() {
  static void* const handle = open_library("libcublas.so." + kMajor);
  return handle;
}

template <typename F>
F find(void* library, const char* name) {
  ::dlerror();
  void* address = ::dlsym(library, name);
  if (address == nullptr) {
    const char* why = ::dlerror();
    throw Error(std::string("cuBLAS: no function ") + name +
                " in the loaded library: " + (why != nullptr ? why : "unknown"));
  }
  return reinterpret_cast<F>(address);
}

}  // namespace
}  // namespace dragoman::cuda

// The library's NAME, looked up on the first call of this function.
#define DRAGOMAN_FORWARD(library, name)                                                                 \
  static const auto real = ::dragoman::cuda::find<decltype(&name)>(::dragoman::cuda::library(), #name); \
  return real

extern "C" {

// cuBLASLt (kernels/cuda/gemm.cu, context.cpp, check.h, runtime_info.cpp).
cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) { DRAGOMAN_FORWARD(cublas_lt, cublasLtCreate)(handle); }

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) { DRAGOMAN_FORWARD(cublas_lt, cublasLtDestroy)(handle); }

const char* cublasLtGetStatusString(cublasStatus_t status) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtGetStatusString)(status);
}

cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtGetProperty)(type, value);
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                              cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc,
                              const void* beta, const void* c, cublasLtMatrixLayout_t c_desc, void* d,
                              cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatmul)
  (handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace, workspace_bytes, stream);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc,
                                              cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatmulAlgoGetHeuristic)
  (handle, desc, a_desc, b_desc, c_desc, d_desc, preference, requested, results, returned);
}

cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr, void* buf, size_t bytes,
                                                    size_t* written) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatmulAlgoConfigGetAttribute)(algo, attr, buf, bytes, written);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatmulDescCreate)(desc, compute, scale);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatmulDescDestroy)(desc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatmulDescSetAttribute)(desc, attr, buf, bytes);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* preference) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatmulPreferenceCreate)(preference);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatmulPreferenceDestroy)(preference);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t preference,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t bytes) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatmulPreferenceSetAttribute)(preference, attr, buf, bytes);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatrixLayoutCreate)(layout, type, rows, cols, ld);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatrixLayoutDestroy)(layout);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t bytes) {
  DRAGOMAN_FORWARD(cublas_lt, cublasLtMatrixLayoutSetAttribute)(layout, attr, buf, bytes);
}

// cuBLAS (a handle, in tests/cuda/test_runtime_info.cpp).
cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) { DRAGOMAN_FORWARD(cublas, cublasCreate_v2)(handle); }

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) { DRAGOMAN_FORWARD(cublas, cublasDestroy_v2)(handle); }

}  // extern "C"
