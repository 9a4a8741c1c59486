// The 16-bit float storage types of mixed precision: bf16 (bfloat16: 8 exponent bits, 7 mantissa
// bits; float32's range) and f16 (IEEE 754 binary16: 5 exponent bits, 10 mantissa bits; largest
// finite 65504). They only store: arithmetic is done in float after to_float(), and results are
// stored back with from_float(), which rounds to nearest, ties to even (as CUDA's __float2bfloat16
// and __float2half do, and as PyTorch and numpy round). NaN stays NaN (a quiet NaN of the same sign),
// infinities stay infinite, values beyond the largest finite value round to infinity, and f16 keeps
// its subnormals (down to 2^-24). The conversions are DRAGOMAN_HOST_DEVICE: the CUDA kernels round
// with this same code, so a CPU kernel rounding at the same points is their exact spec.
#pragma once

#include <cstdint>
#include <cstring>

#include "base/host_device.h"

namespace dragoman {

namespace half_detail {

DRAGOMAN_HOST_DEVICE inline std::uint32_t bits_of(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

DRAGOMAN_HOST_DEVICE inline float float_of(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

}  // namespace half_detail

struct bf16 {
  std::uint16_t bits = 0;

  DRAGOMAN_HOST_DEVICE static bf16 from_bits(std::uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
  // Round to nearest even: add 0x7FFF plus the lowest kept bit, then drop the low 16 bits (a carry
  // into the exponent is the correct rounding up, up to infinity).
  DRAGOMAN_HOST_DEVICE static bf16 from_float(float value) {
    const std::uint32_t u = half_detail::bits_of(value);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return from_bits(static_cast<std::uint16_t>((u >> 16) | 0x0040u));  // NaN
    return from_bits(static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16));
  }
  DRAGOMAN_HOST_DEVICE float to_float() const { return half_detail::float_of(static_cast<std::uint32_t>(bits) << 16); }
};

struct f16 {
  std::uint16_t bits = 0;

  DRAGOMAN_HOST_DEVICE static f16 from_bits(std::uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
  DRAGOMAN_HOST_DEVICE static f16 from_float(float value) {
    const std::uint32_t u = half_detail::bits_of(value);
    const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    const std::uint32_t magnitude = u & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return from_bits(sign | 0x7E00u);   // NaN
    if (magnitude >= 0x477FF000u) return from_bits(sign | 0x7C00u);  // >= 65520 (and inf): infinity
    if (magnitude >= 0x38800000u) {                                  // >= 2^-14: normal
      // Rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits, ties to even; a
      // carry out of the mantissa increments the exponent, which is the right result.
      const std::uint32_t rebiased = magnitude - 0x38000000u;
      const std::uint32_t rounded = rebiased + 0x0FFFu + ((rebiased >> 13) & 1u);
      return from_bits(static_cast<std::uint16_t>(sign | (rounded >> 13)));
    }
    if (magnitude < 0x33000000u) return from_bits(sign);  // < 2^-25: rounds to zero (2^-25 itself is a tie to 0)
    // Subnormal: value = m * 2^(e-150) with the implicit bit; the result counts units of 2^-24.
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126u - exponent;  // 14..24: bits dropped below 2^-24
    const std::uint32_t kept = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1u);
    const std::uint32_t result = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
    return from_bits(static_cast<std::uint16_t>(sign | result));
  }
  DRAGOMAN_HOST_DEVICE float to_float() const {
    const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
    std::uint32_t mantissa = bits & 0x3FFu;
    if (exponent == 0x1Fu) return half_detail::float_of(sign | 0x7F800000u | (mantissa << 13));  // inf, NaN
    if (exponent != 0) return half_detail::float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    if (mantissa == 0) return half_detail::float_of(sign);  // +-0
    // Subnormal: normalise the mantissa into float's normal range.
    std::uint32_t e = 113u;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    return half_detail::float_of(sign | (e << 23) | ((mantissa & 0x3FFu) << 13));
  }
};

// Widening to float and rounding from float, for any element type a kernel stores (float itself
// included), so one kernel body serves every storage type.
DRAGOMAN_HOST_DEVICE inline float to_float(float v) { return v; }
DRAGOMAN_HOST_DEVICE inline float to_float(bf16 v) { return v.to_float(); }
DRAGOMAN_HOST_DEVICE inline float to_float(f16 v) { return v.to_float(); }

template <typename T>
DRAGOMAN_HOST_DEVICE inline T from_float(float v) {
  return T::from_float(v);
}
template <>
DRAGOMAN_HOST_DEVICE inline float from_float<float>(float v) {
  return v;
}

}  // namespace dragoman
