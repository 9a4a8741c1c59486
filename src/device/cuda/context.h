// The execution context of a CUDA device: one stream, a cuBLASLt handle and its workspace, created
// on first use and kept until release_contexts(). All of a device's work (kernels, copies, memsets,
// cuBLASLt calls) goes to its context's stream, so it runs in the order it was issued and the
// caching allocator can hand a freed block to the next request at once (stream order, see
// core/allocator.h). A DeviceGuard makes a device current for a scope and restores the previous
// one, so code that touches device 1 does not silently move the caller's later launches there.
//
// Plain C++ header (no CUDA types): ops include it in every build and call it only inside
// `if constexpr (kWithCuda)` (device/device.h), so the CPU-only build needs no definition.
#pragma once

#include <cstddef>

#include "device/cuda/stream.h"

struct cublasLtContext;  // cuBLASLt's opaque handle (cublasLtHandle_t is cublasLtContext*)

namespace dragoman::cuda {

// Device indices 0 .. kMaxDevices - 1 (contexts and allocators live in fixed arrays of this size).
inline constexpr int kMaxDevices = 64;

// cuBLASLt workspace per device: 32 MiB, what NVIDIA recommends for Hopper (4 MiB would do for
// earlier GPUs); a larger workspace lets the heuristics pick split-K algorithms.
inline constexpr std::size_t kBlasLtWorkspaceBytes = std::size_t{32} << 20;

class DeviceGuard {
 public:
  // Makes `device` current (cudaSetDevice only when it is not already). Throws on a bad index.
  explicit DeviceGuard(int device);
  // Restores the device that was current before. Never throws: an error is kept for
  // rethrow_deferred_error() (deferred_error.h).
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;  // -1: the device was already current, nothing to restore
};

struct Context {
  int device = 0;
  Stream stream = nullptr;            // non-blocking: never waits for the legacy default stream
  cublasLtContext* blaslt = nullptr;  // cublasLtHandle_t
  void* blaslt_workspace = nullptr;   // device memory [kBlasLtWorkspaceBytes], for `stream` only
  std::size_t blaslt_workspace_bytes = 0;
};

// The context of `device`, created on first use (thread-safe; lock-free once created). Throws
// dragoman::Error for an index outside [0, min(device count, kMaxDevices)).
const Context& context(int device);

// Shorthand for context(device).stream.
inline Stream stream_of(int device) { return context(device).stream; }

// Waits until all work issued to the device's context stream has finished.
void synchronize(int device);

// Destroys every context (stream, handle, workspace). For the end of the program (release_all()
// in core/allocator.h calls it): no work may be in flight and no Context reference may be used
// afterwards; a later context() call creates a new one.
void release_contexts();

// True: defined only in a build with CUDA (dragoman_cuda); the build's answer for every caller is
// ops/build_info.h's built_with_cuda().
bool built_with_cuda();

}  // namespace dragoman::cuda
