// The host emulation's stand-in for CUDA's cuda_fp16.h (tests/emulated_cuda/emulated_cuda.h): the
// 16-bit type WMMA multiplies, its bits only.
#pragma once

#include <cstdint>

struct __half {
  std::uint16_t x;
};
