// Element type casts between the float storage types (the CPU spec of kernels/cuda/cast.h):
// out[i] = from_float<To>(to_float(in[i])): widening is exact, narrowing rounds to nearest even
// (core/half.h). Used to refresh a bf16/f16 copy of fp32 weights and to read results back.
#pragma once

#include <cstddef>

#include "core/half.h"

namespace dragoman::cpu {

// in, out: [n], not overlapping.
template <typename From, typename To>
void cast(const From* in, To* out, std::size_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) out[i] = from_float<To>(to_float(in[i]));
}

}  // namespace dragoman::cpu
