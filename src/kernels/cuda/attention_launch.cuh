// Host helpers shared by the tiled and the tensor-core attention kernels (attention_tiled.cu,
// attention_mma.cu), whose blocks take more dynamic shared memory than the default 48 KiB: the
// device's opt-in limit, the opt-in itself, and the launch. Private to kernels/cuda/attention*.cu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "base/error.h"
#include "device/cuda/check.h"
#include "device/cuda/stream.h"

namespace dragoman::cuda::attention_detail {

// Dynamic shared memory a block has without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline constexpr std::size_t kDefaultShared = 48 * 1024;

// A value of the current device, compute(device) the first time it is asked for that device and
// kept (one cache per call site: Compute is each caller's own lambda type). Thread-safe.
template <typename Value, typename Compute>
Value once_per_device(Compute compute) {
  static std::mutex mutex;
  static std::map<int, Value> values;
  int device = 0;
  DRAGOMAN_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = values.find(device);
  if (found != values.end()) return found->second;
  const Value value = compute(device);
  values[device] = value;
  return value;
}

// The shared memory a block of the current device may opt in to (asked once per device).
inline std::size_t device_shared_limit() {
  return once_per_device<std::size_t>([](int device) {
    int bytes = 0;
    DRAGOMAN_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return static_cast<std::size_t>(bytes);
  });
}

// Lets `kernel` use all the shared memory a block may opt in to on the current device (once per
// kernel and device: the attribute belongs to the device's context).
inline void allow_shared(const void* kernel) {
  static std::mutex mutex;
  static std::set<std::pair<const void*, int>> done;
  int device = 0;
  DRAGOMAN_CUDA_CHECK(cudaGetDevice(&device));
  const std::size_t limit = device_shared_limit();
  const std::lock_guard<std::mutex> lock(mutex);
  if (!done.insert({kernel, device}).second) return;
  DRAGOMAN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(limit)));
}

// Launches `blocks` blocks of `threads` threads of kernel with `bytes` of dynamic shared memory
// (opting in beyond 48 KiB); the grid's x dimension holds up to 2^31 - 1 blocks (`unit` names what
// a block is, for the error).
template <typename... Params, typename... Args>
void launch_blocks(void (*kernel)(Params...), std::int64_t blocks, unsigned threads, std::size_t bytes, Stream stream,
                   const char* unit, Args... args) {
  if (blocks <= 0) return;
  if (blocks > 0x7FFFFFFF) throw Error("cuda::attention: " + std::to_string(blocks) + " " + unit + " in one grid");
  if (bytes > kDefaultShared) allow_shared(reinterpret_cast<const void*>(kernel));
  kernel<<<static_cast<unsigned>(blocks), threads, bytes, stream>>>(args...);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dragoman::cuda::attention_detail
