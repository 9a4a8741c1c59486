// Per-device execution contexts (see context.h). A CUDA-only .cpp: part of dragoman_cuda.
#include "device/cuda/context.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "device/cuda/check.h"
#include "device/cuda/runtime_info.h"

namespace dragoman::cuda {
namespace {

// Created contexts, by device. Reads are one atomic load; creation and release take the mutex.
std::array<std::atomic<Context*>, kMaxDevices> g_contexts{};
std::mutex g_contexts_mutex;

void check_index(int device) {
  const int count = device_count();
  if (device < 0 || device >= count || device >= kMaxDevices) {
    throw Error("cuda:" + std::to_string(device) + " does not exist (" + std::to_string(count) +
                " CUDA device(s) visible)");
  }
}

Context* create_context(int device) {
  const DeviceGuard guard(device);
  auto context = std::make_unique<Context>();
  context->device = device;
  DRAGOMAN_CUDA_CHECK(cudaStreamCreateWithFlags(&context->stream, cudaStreamNonBlocking));
  cublasLtHandle_t handle = nullptr;
  DRAGOMAN_CUBLAS_CHECK(cublasLtCreate(&handle));
  context->blaslt = handle;
  DRAGOMAN_CUDA_CHECK(cudaMalloc(&context->blaslt_workspace, kBlasLtWorkspaceBytes));
  context->blaslt_workspace_bytes = kBlasLtWorkspaceBytes;
  return context.release();
}

void destroy_context(const Context& context) {
  const DeviceGuard guard(context.device);
  DRAGOMAN_CUDA_CHECK(cudaStreamSynchronize(context.stream));
  DRAGOMAN_CUDA_CHECK(cudaFree(context.blaslt_workspace));
  DRAGOMAN_CUBLAS_CHECK(cublasLtDestroy(context.blaslt));
  DRAGOMAN_CUDA_CHECK(cudaStreamDestroy(context.stream));
}

}  // namespace

DeviceGuard::DeviceGuard(int device) {
  int current = -1;
  DRAGOMAN_CUDA_CHECK(cudaGetDevice(&current));
  if (current == device) return;
  DRAGOMAN_CUDA_CHECK(cudaSetDevice(device));
  previous_ = current;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) DRAGOMAN_CUDA_CHECK_NOTHROW(cudaSetDevice(previous_));
}

const Context& context(int device) {
  if (device >= 0 && device < kMaxDevices) {
    if (const Context* c = g_contexts[static_cast<std::size_t>(device)].load(std::memory_order_acquire)) return *c;
  }
  check_index(device);
  const std::lock_guard<std::mutex> lock(g_contexts_mutex);
  auto& slot = g_contexts[static_cast<std::size_t>(device)];
  if (Context* c = slot.load(std::memory_order_acquire)) return *c;  // another thread was first
  Context* c = create_context(device);
  slot.store(c, std::memory_order_release);
  return *c;
}

void synchronize(int device) { DRAGOMAN_CUDA_CHECK(cudaStreamSynchronize(context(device).stream)); }

void release_contexts() {
  const std::lock_guard<std::mutex> lock(g_contexts_mutex);
  // Every context is released even if one fails (after a sticky fault all of them will); the
  // first error is thrown at the end.
  std::string first_error;
  for (auto& slot : g_contexts) {
    const std::unique_ptr<Context> c(slot.exchange(nullptr, std::memory_order_acq_rel));
    if (!c) continue;
    try {
      destroy_context(*c);
    } catch (const std::exception& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (!first_error.empty()) throw Error(first_error);
}

bool built_with_cuda() { return true; }

}  // namespace dragoman::cuda
