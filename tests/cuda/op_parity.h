// Helpers of the GPU-vs-CPU parity tests of the ops (test_ops_linear.cpp, test_ops_cross_entropy.cpp):
// seeded random tensors, units in the last place, and an element-wise comparison
// |got - ref| <= tolerance(i) that prints the first mismatches.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "core/tensor.h"

namespace dragoman::parity {

inline const Device kGpu = Device::cuda(0);

// A CPU tensor of `dtype` with elements uniform in [-scale, scale] (drawn in f32, then rounded).
inline Tensor random_tensor(const Shape& shape, DType dtype, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<float> values(static_cast<std::size_t>(shape_numel(shape)));
  for (float& v : values) v = uniform(rng);
  return Tensor::from_vector(values, shape).to(dtype);
}

// The elements of a tensor of any float dtype on any device, as doubles (exact).
inline std::vector<double> as_doubles(const Tensor& t) {
  const std::vector<float> f = t.to(Device::cpu()).to(DType::kF32).to_vector<float>();
  return {f.begin(), f.end()};
}

// The spacing of `dtype`'s values at |x| (one unit in the last place; subnormal spacing below the
// smallest normal).
inline double ulp(double x, DType dtype) {
  const int mantissa = dtype == DType::kBF16 ? 7 : dtype == DType::kF16 ? 10 : 23;
  const int min_exponent = dtype == DType::kF16 ? -14 : -126;
  const int e = x == 0 ? min_exponent : std::max(std::ilogb(x), min_exponent);
  return std::ldexp(1.0, e - mantissa);
}

inline constexpr double kEpsF32 = 1.0 / (1 << 23);

// Counts the i with |got[i] - ref[i]| > tolerance(i) (or a NaN on one side only) and prints the
// first five.
template <typename Tolerance>
std::size_t mismatches(const std::vector<double>& got, const std::vector<double>& ref, Tolerance tolerance,
                       const char* what) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < ref.size() && i < got.size(); ++i) {
    const double tol = tolerance(i);
    const bool ok = std::isnan(ref[i]) ? std::isnan(got[i]) : std::abs(got[i] - ref[i]) <= tol;
    if (!ok && bad++ < 5) {
      std::printf("%s: element %zu of %zu: got %.9g, expected %.9g (tolerance %.3g)\n", what, i, ref.size(), got[i],
                  ref[i], tol);
    }
  }
  if (got.size() != ref.size()) ++bad;
  return bad;
}

}  // namespace dragoman::parity
