// Element type casts between the float storage types (the CPU spec of device/cuda/cast.h):
// out[i] = from_float<To>(to_float(in[i])): widening is exact, narrowing rounds to nearest even
// (base/half.h). Used to refresh a bf16/f16 copy of fp32 weights and to read results back. Also
// round_once(), a double rounded to any storage type in one rounding.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base/half.h"

namespace dragoman::cpu {

// in, out: [n], not overlapping.
template <typename From, typename To>
void cast(const From* in, To* out, std::size_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) out[i] = from_float<To>(to_float(in[i]));
}

// The element of T (double, float, bf16 or f16) nearest to v, ties to even: one rounding, for
// values computed on the host in double (the sinusoids). Going through float would round twice,
// which misses the nearest bf16/f16 value when v rounds to a float that is exactly a tie of T. So v
// is first rounded to float towards zero with the lowest bit set when inexact (round to odd): the
// float then lies strictly between the same two T neighbours as v whenever v is not exactly
// representable, and from_float's rounding to nearest even gives the correctly rounded result
// (float keeps at least 13 more bits than bf16 and f16).
template <typename T>
T round_once(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(v);
  } else {
    float f = static_cast<float>(v);
    if (std::isfinite(f) && static_cast<double>(f) != v) {
      if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);  // towards zero
      std::uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      bits |= 1u;  // sticky: inexact
      std::memcpy(&f, &bits, sizeof f);
    }
    return T::from_float(f);
  }
}

}  // namespace dragoman::cpu
