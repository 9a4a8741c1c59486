// Element type casts on CUDA, twins of kernels/cpu/cast.h: same arguments plus a stream, same bits
// (the per-element conversion is base/half.h's, compiled for the device).
#pragma once

#include <cstddef>

#include "base/half.h"
#include "device/cuda/stream.h"

namespace dragoman::cuda {

// in, out: device memory [n] of the stream's device (the caller holds its DeviceGuard). Asynchronous
// on `stream`; errors are checked at launch.
// Instantiated for float -> bf16, float -> f16, bf16 -> float, f16 -> float.
template <typename From, typename To>
void cast(const From* in, To* out, std::size_t n, Stream stream);

}  // namespace dragoman::cuda
