// The host emulation's stand-in for CUDA's cuda_bf16.h (tests/emulated_cuda/emulated_cuda.h): the
// 16-bit type WMMA multiplies, its bits only.
#pragma once

#include <cstdint>

struct __nv_bfloat16 {
  std::uint16_t x;
};
