// What the per-op tests share (#12 section 6): the (device, dtype) cases an op's one test body runs
// for, per-dtype tolerances, the awkward sizes, sentinel-guarded output buffers, and conversions
// between tensors of any float dtype and double vectors.
//
// An op test is one body taking an OpCase:
//   for (const test::OpCase& c : test::op_cases()) { DYNAMIC_SECTION(c.name) { body(c); } }
// CUDA cases join the list when an op's CUDA kernel exists (issue #13); today every case is a CPU one.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/numeric.h"
#include "core/philox.h"
#include "core/tensor.h"

namespace dragoman::test {

struct OpCase {
  std::string name;  // "cpu f32", "cpu bf16", ...
  Device device;
  DType dtype;
};

// cpu f64, f32, bf16, f16.
inline std::vector<OpCase> op_cases() {
  return {{"cpu f64", Device::cpu(), DType::kF64},
          {"cpu f32", Device::cpu(), DType::kF32},
          {"cpu bf16", Device::cpu(), DType::kBF16},
          {"cpu f16", Device::cpu(), DType::kF16}};
}

// Sizes that catch off-by-one blocking and vector tails in kernels.
inline const std::vector<std::int64_t>& awkward_sizes() {
  static const std::vector<std::int64_t> sizes = {1, 7, 31, 32, 33, 255, 513, 1025};
  return sizes;
}

// The relative tolerance of a result of `dtype` against a double reference of magnitude about 1,
// after a computation of a few roundings: a few units in the last place of the storage type.
inline double tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF64: return 1e-12;
    case DType::kF32: return 1e-5;
    case DType::kF16: return 4e-3;   // 2^-10 per rounding
    case DType::kBF16: return 3e-2;  // 2^-7 per rounding
    default: return 0;
  }
}

// One unit in the last place of a value of magnitude 1 in `dtype` (its rounding step).
inline double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::kF64: return 0x1p-52;
    case DType::kF32: return 0x1p-23;
    case DType::kF16: return 0x1p-10;
    case DType::kBF16: return 0x1p-7;
    default: return 0;
  }
}

// Element i of a float tensor of any float dtype on the CPU, as a double.
inline double element(const Tensor& t, std::int64_t i) {
  switch (t.dtype()) {
    case DType::kF64: return t.data<double>()[i];
    case DType::kF32: return t.data<float>()[i];
    case DType::kBF16: return t.data<bf16>()[i].to_float();
    case DType::kF16: return t.data<f16>()[i].to_float();
    default: FAIL("element(): not a float tensor: " << t.describe()); return 0;
  }
}

// The contiguous tensor's values as doubles (copied to the CPU first).
inline std::vector<double> to_doubles(const Tensor& t) {
  const Tensor host = t.to(Device::cpu()).contiguous();
  std::vector<double> out(static_cast<std::size_t>(host.numel()));
  for (std::int64_t i = 0; i < host.numel(); ++i) out[static_cast<std::size_t>(i)] = element(host, i);
  return out;
}

// A tensor of `dtype` on `device` holding `values`, each rounded once to the dtype.
inline Tensor from_doubles(const std::vector<double>& values, const Shape& shape, DType dtype, Device device) {
  Tensor host = Tensor::empty(shape, dtype, Device::cpu());
  REQUIRE(static_cast<std::size_t>(host.numel()) == values.size());
  for (std::int64_t i = 0; i < host.numel(); ++i) {
    const double v = values[static_cast<std::size_t>(i)];
    switch (dtype) {
      case DType::kF64: host.data<double>()[i] = v; break;
      case DType::kF32: host.data<float>()[i] = static_cast<float>(v); break;
      case DType::kBF16: host.data<bf16>()[i] = bf16::from_float(static_cast<float>(v)); break;
      case DType::kF16: host.data<f16>()[i] = f16::from_float(static_cast<float>(v)); break;
      default: FAIL("from_doubles(): not a float dtype: " << dtype_name(dtype));
    }
  }
  return host.to(device);
}

// n values uniform in [offset - scale, offset + scale) from Philox (seed 99, `rng_stream`).
inline std::vector<double> random_doubles(std::int64_t n, std::uint64_t rng_stream, double scale = 1.0,
                                          double offset = 0.0) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = offset + scale * (2.0 * philox::uniform(99, rng_stream, i) - 1.0);
  return v;
}

// The same values as the dtype holds them: each rounded to `dtype` and widened back (the exact
// inputs of a reference computation for a low-precision kernel).
inline std::vector<double> rounded_to(const std::vector<double>& values, DType dtype) {
  return to_doubles(from_doubles(values, {static_cast<std::int64_t>(values.size())}, dtype, Device::cpu()));
}

// max over i of |a[i] - b[i]| / max(1, |b[i]|).
inline double max_relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::fmax(worst, std::fabs(a[i] - b[i]) / std::fmax(1.0, std::fabs(b[i])));
  }
  return worst;
}

// A kernel's output buffer of n elements followed by kSentinels guard elements of a value no
// kernel writes; intact() says whether they survived (a kernel writing past its end fails a test).
template <typename T>
class GuardedBuffer {
 public:
  static constexpr std::int64_t kSentinels = 16;
  explicit GuardedBuffer(std::int64_t n, T fill = store<T>(0))
      : n_(n), data_(static_cast<std::size_t>(n + kSentinels), fill) {
    for (std::int64_t i = n; i < n + kSentinels; ++i) data_[static_cast<std::size_t>(i)] = sentinel();
  }
  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  std::int64_t size() const { return n_; }
  bool intact() const {
    for (std::int64_t i = n_; i < n_ + kSentinels; ++i) {
      if (!same_bits(data_[static_cast<std::size_t>(i)], sentinel())) return false;
    }
    return true;
  }

 private:
  static T sentinel() { return store<T>(static_cast<acc_t<T>>(-12345.0)); }
  static bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }
  std::int64_t n_;
  std::vector<T> data_;
};

}  // namespace dragoman::test
