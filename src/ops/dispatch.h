// Shared checks of the ops and their one device dispatch: each op checks shapes, dtypes and devices,
// then calls on_device with its CPU case and its CUDA case, and each case calls the kernel for the
// storage type. The CUDA case is compiled only in a build with CUDA (no stubs elsewhere).
//
// Operands come in three classes (docs/MODEL.md, "Precision"):
//   activation      the compute dtype (f64, f32, bf16 or f16): inputs, outputs, activation gradients
//   parameter grad  accumulator_dtype(compute dtype): f64 for f64, f32 otherwise; accumulated (+=)
//   statistic       accumulator_dtype(compute dtype): layer-norm mean/rstd, attention log-sum-exp
#pragma once

#include <string>
#include <type_traits>

#include "base/error.h"
#include "base/numeric.h"
#include "core/tensor.h"
#include "device/cuda/context.h"
#include "device/device.h"

namespace dragoman::ops::detail {

// Throws "OP: MESSAGE" unless `ok`.
inline void require(bool ok, const char* op, const std::string& message) {
  if (!ok) throw Error(std::string(op) + ": " + message);
}

// Calls fn(T()) with T = float or double, the element type of a floating-point tensor.
template <typename Fn>
void dispatch_float(const char* op, const Tensor& t, Fn fn) {
  switch (t.dtype()) {
    case DType::kF32: fn(float()); return;
    case DType::kF64: fn(double()); return;
    default: throw Error(std::string(op) + ": expected an f32 or f64 tensor, got " + t.describe());
  }
}

// Calls fn(T()) with T = double, float, bf16 or f16, the storage type of a float tensor.
template <typename Fn>
void dispatch_storage(const char* op, const Tensor& t, Fn fn) {
  switch (t.dtype()) {
    case DType::kF32: fn(float()); return;
    case DType::kF64: fn(double()); return;
    case DType::kBF16: fn(bf16()); return;
    case DType::kF16: fn(f16()); return;
    default: throw Error(std::string(op) + ": expected an f32, f64, bf16 or f16 tensor, got " + t.describe());
  }
}

// Calls fn(T()) with T = float, bf16 or f16: the GEMM and cross-entropy CUDA cases (cuBLASLt has
// no f64 path with fp32 compute; f64 is for the CPU's gradient checks).
template <typename Fn>
void dispatch_cuda(const char* op, const Tensor& t, Fn fn) {
  require(t.dtype() != DType::kF64, op, "f64 has no CUDA kernels; use f32, bf16 or f16 on a GPU");
  dispatch_storage(op, t, [&](auto zero) {
    if constexpr (!std::is_same_v<decltype(zero), double>) fn(zero);
  });
}

// What an op's CUDA case holds around its launches: the device of `t` made current (restored at
// the end of the scope) and that device's context stream, where every launch goes.
struct CudaScope {
  explicit CudaScope(const Tensor& t) : guard(t.device().index), stream(cuda::stream_of(t.device().index)) {}
  cuda::DeviceGuard guard;
  cuda::Stream stream;
};

// The one device dispatch of every op: on_cpu() when `t` is on the CPU; on a GPU, on_cuda(stream)
// with t's device made current (restored afterwards) and that device's context stream, where every
// launch goes. on_cuda is a generic lambda, [&](auto stream) {...}: its body is then a template that
// is instantiated only here, inside `if constexpr (kWithCuda)`, so a CPU-only build compiles no
// CUDA case and names no CUDA kernel; there a GPU tensor is "OP: this build has no CUDA".
template <typename OnCpu, typename OnCuda>
void on_device(const char* op, const Tensor& t, OnCpu&& on_cpu, OnCuda&& on_cuda) {
  if (t.device().is_cpu()) {
    on_cpu();
    return;
  }
  if constexpr (kWithCuda) {
    const CudaScope scope(t);
    on_cuda(scope.stream);
  } else {
    throw_no_cuda(op);
  }
}

// A parameter gradient or a statistic of the activation `ref`: accumulator_dtype(ref's dtype), on
// ref's device, contiguous.
inline void require_accumulator(const char* op, const char* what, const Tensor& t, const Tensor& ref) {
  require(t.defined(), op, std::string(what) + " is undefined");
  const DType expected = accumulator_dtype(ref.dtype());
  require(t.dtype() == expected && t.device() == ref.device(), op,
          std::string(what) + " is " + t.describe() + ", expected " + dtype_name(expected) + " on " +
              ref.device().str() + " (the accumulator dtype of " + dtype_name(ref.dtype()) + " activations)");
  require(t.is_contiguous(), op, std::string(what) + " must be contiguous");
}

// Same dtype and device as `ref`, and contiguous.
inline void require_like(const char* op, const char* what, const Tensor& t, const Tensor& ref) {
  require(t.defined(), op, std::string(what) + " is undefined");
  require(t.dtype() == ref.dtype() && t.device() == ref.device(), op,
          std::string(what) + " is " + t.describe() + ", expected " + dtype_name(ref.dtype()) + " on " +
              ref.device().str());
  require(t.is_contiguous(), op, std::string(what) + " must be contiguous");
}

inline void require_shape(const char* op, const char* what, const Tensor& t, const Shape& shape) {
  require(t.shape() == shape, op,
          std::string(what) + " has shape " + shape_string(t.shape()) + ", expected " + shape_string(shape));
}

}  // namespace dragoman::ops::detail
