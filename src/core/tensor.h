// Tensor: a typed, shaped, strided view of a shared storage on one device. Copying a Tensor copies
// the view, not the data (like a shared_ptr); views (view, narrow, transpose) share the storage;
// contiguous() and clone() copy. There is no autograd here: layers write their backward by hand.
//
// Storage comes from the device's caching allocator (core/allocator.h). Element access through
// data<T>() checks that T matches the dtype; kernels then receive raw pointers and strides.
//
// Constness says what a function writes: a const Tensor hands out only const pointers (data<T>(),
// raw_data()) and its writing members (copy_from, fill_zero) are non-const, so a function that
// writes into a tensor argument takes it as Tensor&, and one that takes const Tensor& only reads
// it. Because a Tensor is a handle, a copy of a const Tensor can still write its elements: code
// that writes through a view it made (a named non-const local, `Tensor dweight = ...;`) says so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/half.h"
#include "device/device.h"

namespace dragoman {

using Shape = std::vector<std::int64_t>;

std::string shape_string(const Shape& shape);  // "[2, 3, 4]"
std::int64_t shape_numel(const Shape& shape);

// The DType of a C++ element type (float, double, std::int32_t, std::uint8_t, bf16, f16).
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::kF32; }
template <>
constexpr DType dtype_of<double>() { return DType::kF64; }
template <>
constexpr DType dtype_of<std::int32_t>() { return DType::kI32; }
template <>
constexpr DType dtype_of<std::uint8_t>() { return DType::kU8; }
template <>
constexpr DType dtype_of<std::int8_t>() { return DType::kI8; }
template <>
constexpr DType dtype_of<bf16>() { return DType::kBF16; }
template <>
constexpr DType dtype_of<f16>() { return DType::kF16; }

class CachingAllocator;

// A block of device memory; returned to its allocator when the last Tensor using it goes away. On
// a CUDA device the block belongs to the device's context stream (device/cuda/context.h): work on
// the tensor goes to that stream, so the block can be reused in stream order once it is freed.
class Storage {
 public:
  Storage(std::size_t bytes, Device device);
  ~Storage();  // never throws (the allocator keeps a bad deallocate for its next call)
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  CachingAllocator* allocator_;
  void* data_;
  std::size_t bytes_;
  Device device_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  // Uninitialised contents.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::cpu());
  // A CPU tensor holding a copy of `values` (values.size() must equal the shape's element count).
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }  // in elements
  int rank() const { return static_cast<int>(shape_.size()); }
  // Size of dimension `d`; negative d counts from the end.
  std::int64_t dim(int d) const;
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;
  // True when both are views of the same storage.
  bool shares_storage(const Tensor& other) const { return storage_ == other.storage_; }

  // Pointer to the first element (offset applied). T must match the dtype. A const tensor gives
  // read-only elements; writing needs a non-const Tensor.
  template <typename T>
  const T* data() const;
  template <typename T>
  T* data();
  const void* raw_data() const;
  void* raw_data();

  // Same elements, new shape; needs a contiguous tensor. One dimension may be -1 (inferred).
  Tensor view(const Shape& shape) const;
  // Elements [start, start + length) of dimension d.
  Tensor narrow(int d, std::int64_t start, std::int64_t length) const;
  // The most entries dimension d could have at this view's offset and strides: for dimension 0,
  // as many as the storage holds; for the others, as many as fit in one entry of the dimension
  // before (so that widened entries never overlap). More than dim(d) where this is a narrowed
  // view of a larger tensor (widen's limit).
  std::int64_t capacity(int d) const;
  // The same view with `length` entries of dimension d, which may reach past dim(d) into the
  // storage behind it (a narrowed view grown back: the decoder caches' spare rows). Throws if
  // length exceeds capacity(d).
  Tensor widen(int d, std::int64_t length) const;
  // Dimensions a and b swapped (a strided view).
  Tensor transpose(int a, int b) const;
  // This tensor if contiguous, otherwise a contiguous copy.
  Tensor contiguous() const;
  // A contiguous copy (never shares storage).
  Tensor clone() const;
  // A contiguous copy on `device` (this tensor if already there and contiguous).
  Tensor to(Device device) const;
  // A contiguous copy converted to `dtype`, on the same device. CPU: between f32, f64, i32 by C++
  // conversion; to bf16/f16 rounded to nearest even (base/half.h), from them exactly. CUDA:
  // f32 <-> bf16/f16 (cuda::cast, the same bits), asynchronous on the device's stream.
  Tensor to(DType dtype) const;
  // Copies src's elements into this tensor: same shape and dtype; any strides; any devices. On a
  // GPU the copy is issued to the device's context stream: a copy to a CPU tensor returns when the
  // data is there; one to a GPU tensor may return before it is done (later work on that device is
  // ordered after it; the source may be reused at once). Between two GPUs: synchronous.
  void copy_from(const Tensor& src);
  // Sets every element to zero (on a GPU: a memset on the device's stream).
  void fill_zero();

  // The elements, in row-major order, copied to the host.
  template <typename T>
  std::vector<T> to_vector() const;

  // "f32[2, 3] cpu" for error messages.
  std::string describe() const;

 private:
  std::shared_ptr<Storage> storage_;
  std::int64_t offset_ = 0;  // in elements
  DType dtype_ = DType::kF32;
  Device device_;
  Shape shape_;
  Shape strides_;
};

// Contiguous (row-major) strides of a shape.
Shape contiguous_strides(const Shape& shape);

}  // namespace dragoman
