// Helpers of the GPU-vs-CPU parity tests of the ops (test_ops_linear.cpp, test_ops_cross_entropy.cpp):
// seeded random tensors and units in the last place (comparisons: parity_testing.h's check_close).
#pragma once

#include <cmath>
#include <cstdint>
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

}  // namespace dragoman::parity
