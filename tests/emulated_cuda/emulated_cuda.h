// A host emulation of the CUDA that the tensor-core attention kernels use (kernels/cuda/
// attention_mma.cu and attention_flash.cu, compiled as C++ with DRAGOMAN_CUDA_EMULATION): the
// keywords, threadIdx and blockIdx, __syncthreads, __syncwarp and __shfl_xor_sync, 16-byte vectors,
// dynamic shared memory, the launch, and (include/) stand-ins for cuda_bf16.h, cuda_fp16.h and mma.h.
//
// A launch runs its blocks one after another, each block's threads as std::threads that meet at
// real barriers: a missing __syncthreads shows as a wrong result (or, under ThreadSanitizer, as a
// race); a barrier that some threads skip would deadlock, so every wait is bounded (after 60 s the
// emulation aborts naming the call); a WMMA call that some lanes of a warp skip aborts at the next
// barrier (each thread's calls are counted). The block's
// dynamic shared memory is an exact-size buffer filled with NaN bytes (0xFF) before each block, so a
// read of something never written shows; WMMA's tiles must lie inside it. Correctness only: no
// timing, no memory coalescing, no bank conflicts, no register limits.
//
// The kernels' namespace (attention_detail) is renamed attention_detail_emulated in these builds
// (emulated_attention_*.cpp), so a CUDA build links both without a clash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

#include "device/cuda/stream.h"
#include "emulated_cuda/emulated_cuda_control.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__
#define __align__(n) alignas(n)

struct EmulatedDim3 {
  unsigned x = 0, y = 0, z = 0;
};
extern thread_local EmulatedDim3 threadIdx;
extern thread_local EmulatedDim3 blockIdx;

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

namespace dragoman::emulation {

// The running block's dynamic shared memory.
unsigned char* dynamic_shared();
// The calling thread's lane in its warp.
int lane();
// The calling thread's warp meets (all 32 lanes; `call` names the call should they not).
void warp_sync(const char* call);
// A warp-wide call (WMMA's) by the calling thread: at the next barrier every lane of its warp must
// have made as many.
void count_wmma_call();
// The block's threads meet.
void block_sync();
// Lane ^ offset's value of x, for every lane of the warp.
float warp_exchange(float x, int offset);
// Aborts, naming call and what is wrong, unless ok.
void require(bool ok, const char* call, const char* what);
// Aborts unless [p, p + bytes) lies inside the running block's dynamic shared memory.
void require_shared(const void* p, std::size_t bytes, const char* call);
// Runs `body` as `blocks` blocks of `threads` threads (a multiple of 32) with `shared_bytes` of
// dynamic shared memory each, blockIdx and threadIdx set.
void run_blocks(std::int64_t blocks, unsigned threads, std::size_t shared_bytes, const std::function<void()>& body);
}  // namespace dragoman::emulation

inline void __syncthreads() { dragoman::emulation::block_sync(); }
inline void __syncwarp(unsigned = 0xFFFFFFFFu) { dragoman::emulation::warp_sync("__syncwarp"); }
inline float __shfl_xor_sync(unsigned, float x, int offset) { return dragoman::emulation::warp_exchange(x, offset); }

// What kernels/cuda/attention_launch.cuh gives the kernels' host code.
namespace dragoman::cuda::attention_detail {

inline std::size_t device_shared_limit() { return emulation::shared_limit(); }

template <typename... Params, typename... Args>
void launch_blocks(void (*kernel)(Params...), std::int64_t blocks, unsigned threads, std::size_t bytes, Stream,
                   const char*, Args... args) {
  emulation::require(bytes <= emulation::shared_limit(), "launch_blocks", "more shared memory than a block may have");
  emulation::run_blocks(blocks, threads, bytes, [&] { kernel(args...); });
}

}  // namespace dragoman::cuda::attention_detail
