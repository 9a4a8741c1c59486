// The numeric contract of every kernel, CPU and CUDA (docs/MODEL.md, "Precision"). A kernel is
// templated on its storage type T: double (gradient checks), float, bf16 or f16. It computes in
// acc_t<T> (double for double, float for the others), reads elements with load() (exact) and rounds
// each element it stores once, with store<T>() (round to nearest even, base/half.h). Values a kernel
// keeps between its steps (a row's mean, a running sum, a softmax denominator) stay in acc_t<T>; only
// what is written to memory is rounded. So a CPU kernel for bf16 is the exact spec of its CUDA twin
// wherever their summation orders agree, and its tolerance is the order's, not the type's.
#pragma once

#include "base/dtype.h"
#include "base/half.h"
#include "base/host_device.h"

namespace dragoman {

template <typename T>
struct Accumulator {
  using type = float;
};
template <>
struct Accumulator<double> {
  using type = double;
};
// The type a kernel over T computes in.
template <typename T>
using acc_t = typename Accumulator<T>::type;

DRAGOMAN_HOST_DEVICE inline double load(double v) { return v; }
DRAGOMAN_HOST_DEVICE inline float load(float v) { return v; }
DRAGOMAN_HOST_DEVICE inline float load(bf16 v) { return v.to_float(); }
DRAGOMAN_HOST_DEVICE inline float load(f16 v) { return v.to_float(); }

// The element of type T nearest to v (identity for float and double).
template <typename T>
DRAGOMAN_HOST_DEVICE inline T store(acc_t<T> v) {
  return T::from_float(v);
}
template <>
DRAGOMAN_HOST_DEVICE inline float store<float>(float v) {
  return v;
}
template <>
DRAGOMAN_HOST_DEVICE inline double store<double>(double v) {
  return v;
}

// The dtype of the statistics and parameter gradients that go with activations of `dtype`: f64
// for f64, f32 for f32, bf16 and f16 (the accumulator's dtype).
constexpr DType accumulator_dtype(DType dtype) { return dtype == DType::kF64 ? DType::kF64 : DType::kF32; }

// f32, f64, bf16, f16: the dtypes a float kernel stores.
constexpr bool is_float_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF64 || dtype == DType::kBF16 || dtype == DType::kF16;
}

}  // namespace dragoman
