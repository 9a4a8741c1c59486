// Tensor views and copies (see tensor.h).
#include "core/tensor.h"

#include <cctype>
#include <cstring>
#include <type_traits>

#include "core/allocator.h"
#include "core/error.h"

#if defined(DRAGOMAN_WITH_CUDA)
#include "kernels/cuda/memory.h"
#endif

namespace dragoman {

std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  std::int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Storage::Storage(std::size_t bytes, Device device)
    : data_(allocator_for(device).allocate(bytes)), bytes_(bytes), device_(device) {}

Storage::~Storage() { allocator_for(device_).deallocate(data_, bytes_); }

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (const std::int64_t d : shape) {
    if (d < 0) throw Error("Tensor::empty: negative dimension in shape " + shape_string(shape));
  }
  Tensor t;
  t.storage_ = std::make_shared<Storage>(static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  t.dtype_ = dtype;
  t.device_ = device;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_zero();
  return t;
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  if (static_cast<std::int64_t>(values.size()) != shape_numel(shape)) {
    throw Error("Tensor::from_vector: " + std::to_string(values.size()) + " values for shape " + shape_string(shape));
  }
  Tensor t = empty(shape, dtype_of<T>());
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}

std::int64_t Tensor::dim(int d) const {
  const int r = rank();
  const int i = d < 0 ? d + r : d;
  if (i < 0 || i >= r) throw Error("dimension " + std::to_string(d) + " out of range for " + describe());
  return shape_[static_cast<std::size_t>(i)];
}

// Dense row-major layout; the stride of a dimension of size 1 does not matter (no step is taken).
bool Tensor::is_contiguous() const {
  std::int64_t expected = 1;
  for (std::size_t d = shape_.size(); d-- > 0;) {
    if (shape_[d] != 1 && strides_[d] != expected) return numel() == 0;
    expected *= shape_[d];
  }
  return true;
}

void* Tensor::raw_data() const {
  if (!defined()) throw Error("use of an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<std::int64_t>(dtype_size(dtype_));
}

template <typename T>
T* Tensor::data() const {
  if (dtype_ != dtype_of<T>()) {
    throw Error(std::string("tensor of dtype ") + dtype_name(dtype_) + " accessed as " + dtype_name(dtype_of<T>()));
  }
  return static_cast<T*>(raw_data());
}

Tensor Tensor::view(const Shape& shape) const {
  if (!is_contiguous()) throw Error("view " + shape_string(shape) + " of a non-contiguous tensor " + describe());
  Shape resolved = shape;
  std::int64_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < resolved.size(); ++i) {
    if (resolved[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (resolved[i] < 0) {
      throw Error("invalid view shape " + shape_string(shape));
    } else {
      known *= resolved[i];
    }
  }
  if (inferred >= 0) {
    // With a zero among the known sizes any size fits: refuse rather than keep -1 in the shape.
    if (known == 0) throw Error("cannot infer the -1 of view " + shape_string(shape) + " of " + describe());
    resolved[static_cast<std::size_t>(inferred)] = numel() / known;
  }
  if (shape_numel(resolved) != numel()) {
    throw Error("cannot view " + describe() + " as " + shape_string(shape) + ": element counts differ");
  }
  Tensor t = *this;
  t.shape_ = resolved;
  t.strides_ = contiguous_strides(resolved);
  return t;
}

Tensor Tensor::narrow(int d, std::int64_t start, std::int64_t length) const {
  const std::int64_t size = dim(d);
  const auto i = static_cast<std::size_t>(d < 0 ? d + rank() : d);
  if (start < 0 || length < 0 || start + length > size) {
    throw Error("narrow(" + std::to_string(d) + ", " + std::to_string(start) + ", " + std::to_string(length) +
                ") out of range for " + describe());
  }
  Tensor t = *this;
  t.offset_ += start * strides_[i];
  t.shape_[i] = length;
  return t;
}

Tensor Tensor::transpose(int a, int b) const {
  dim(a);  // range checks
  dim(b);
  const auto i = static_cast<std::size_t>(a < 0 ? a + rank() : a);
  const auto j = static_cast<std::size_t>(b < 0 ? b + rank() : b);
  Tensor t = *this;
  std::swap(t.shape_[i], t.shape_[j]);
  std::swap(t.strides_[i], t.strides_[j]);
  return t;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::to(Device device) const {
  if (device == device_) return contiguous();
  Tensor t = empty(shape_, dtype_, device);
  t.copy_from(*this);
  return t;
}

namespace {

// Copies the elements of a strided CPU view into another of the same shape (strides in elements).
// The trailing dimensions that are dense in both are copied as one run per memcpy.
void copy_strided(const char* src, const Shape& src_strides, char* dst, const Shape& dst_strides, const Shape& shape,
                  std::size_t elem) {
  const std::int64_t n = shape_numel(shape);
  if (n == 0) return;
  std::size_t r = shape.size();
  std::int64_t run = 1;  // elements per memcpy
  while (r > 0 && (shape[r - 1] == 1 || (src_strides[r - 1] == run && dst_strides[r - 1] == run))) {
    run *= shape[r - 1];
    --r;
  }
  const std::size_t run_bytes = static_cast<std::size_t>(run) * elem;
  std::vector<std::int64_t> index(r, 0);
  std::int64_t src_offset = 0, dst_offset = 0;
  for (std::int64_t k = 0; k < n / run; ++k) {
    std::memmove(dst + dst_offset * static_cast<std::int64_t>(elem), src + src_offset * static_cast<std::int64_t>(elem),
                run_bytes);
    for (std::size_t i = r; i-- > 0;) {  // odometer increment over the outer dimensions
      if (++index[i] < shape[i]) {
        src_offset += src_strides[i];
        dst_offset += dst_strides[i];
        break;
      }
      src_offset -= src_strides[i] * (shape[i] - 1);
      dst_offset -= dst_strides[i] * (shape[i] - 1);
      index[i] = 0;
    }
  }
}

}  // namespace

void Tensor::copy_from(const Tensor& src) {
  if (src.shape_ != shape_ || src.dtype_ != dtype_) {
    throw Error("copy_from: source " + src.describe() + " does not match destination " + describe());
  }
  if (numel() == 0) return;
  const std::size_t elem = dtype_size(dtype_);
  if (device_.is_cpu() && src.device_.is_cpu()) {
    if (is_contiguous() && src.is_contiguous()) {
      std::memmove(raw_data(), src.raw_data(), nbytes());
    } else {
      copy_strided(static_cast<const char*>(src.raw_data()), src.strides_, static_cast<char*>(raw_data()), strides_,
                   shape_, elem);
    }
    return;
  }
#if defined(DRAGOMAN_WITH_CUDA)
  if (!is_contiguous() || !src.is_contiguous()) {
    throw Error("copy_from: " + src.describe() + " -> " + describe() +
                ": copies to or from a GPU need contiguous tensors");
  }
  if (!src.device_.is_cpu() && !device_.is_cpu() && src.device_ != device_) {
    copy_from(src.to(Device::cpu()));  // between two GPUs: through the host
    return;
  }
  using cuda::CopyKind;
  const CopyKind kind = src.device_.is_cpu() ? CopyKind::kHostToDevice
                        : device_.is_cpu()   ? CopyKind::kDeviceToHost
                                             : CopyKind::kDeviceToDevice;
  cuda::copy(raw_data(), src.raw_data(), nbytes(), kind, device_.is_cpu() ? src.device_.index : device_.index);
#else
  throw Error("copy_from: " + src.describe() + " -> " + describe() + ": this build has no CUDA");
#endif
}

void Tensor::fill_zero() {
  if (!device_.is_cpu()) {
    copy_from(Tensor::zeros(shape_, dtype_));
    return;
  }
  if (is_contiguous()) {
    if (numel() > 0) std::memset(raw_data(), 0, nbytes());
    return;
  }
  copy_from(Tensor::zeros(shape_, dtype_));
}

namespace {

// Element conversions of Tensor::to(DType): every value goes through double (exact for every source
// type), then to the destination: C++ conversion for f32/f64/i32, round to nearest even for bf16/f16
// (from double via float: exact for f32 sources, the common case).
template <typename D>
D from_double(double v) {
  if constexpr (std::is_same_v<D, bf16> || std::is_same_v<D, f16>) {
    return D::from_float(static_cast<float>(v));
  } else {
    return static_cast<D>(v);
  }
}

template <typename S>
double to_double(S v) {
  if constexpr (std::is_same_v<S, bf16> || std::is_same_v<S, f16>) {
    return static_cast<double>(v.to_float());
  } else {
    return static_cast<double>(v);
  }
}

// Calls fn(T*) with the tensor's data pointer typed by its dtype (the numeric dtypes).
template <typename Fn>
void with_typed_data(const Tensor& t, Fn fn) {
  switch (t.dtype()) {
    case DType::kF32: fn(t.data<float>()); return;
    case DType::kF64: fn(t.data<double>()); return;
    case DType::kI32: fn(t.data<std::int32_t>()); return;
    case DType::kBF16: fn(t.data<bf16>()); return;
    case DType::kF16: fn(t.data<f16>()); return;
    case DType::kU8: break;
  }
  throw Error(std::string("dtype conversion of ") + dtype_name(t.dtype()) + " is not supported");
}

}  // namespace

Tensor Tensor::to(DType dtype) const {
  if (!device_.is_cpu()) throw Error("dtype conversion of " + describe() + ": CPU tensors only");
  const Tensor src = contiguous();
  if (dtype == dtype_) return src.clone();
  Tensor out = empty(shape_, dtype);
  const std::int64_t n = numel();
  with_typed_data(src, [&](const auto* from) {
    with_typed_data(out, [&](auto* to) {
      using D = std::remove_pointer_t<decltype(to)>;
      for (std::int64_t i = 0; i < n; ++i) to[i] = from_double<D>(to_double(from[i]));
    });
  });
  return out;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  const Tensor host = to(Device::cpu());
  const T* p = host.data<T>();
  return std::vector<T>(p, p + numel());
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  std::string s = dtype_name(dtype_);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s + shape_string(shape_) + " " + device_.str();
}

#define DRAGOMAN_TENSOR_INSTANTIATE(T)                                          \
  template Tensor Tensor::from_vector<T>(const std::vector<T>&, const Shape&); \
  template T* Tensor::data<T>() const;                                         \
  template std::vector<T> Tensor::to_vector<T>() const;
DRAGOMAN_TENSOR_INSTANTIATE(float)
DRAGOMAN_TENSOR_INSTANTIATE(double)
DRAGOMAN_TENSOR_INSTANTIATE(std::int32_t)
DRAGOMAN_TENSOR_INSTANTIATE(std::uint8_t)
DRAGOMAN_TENSOR_INSTANTIATE(bf16)
DRAGOMAN_TENSOR_INSTANTIATE(f16)
#undef DRAGOMAN_TENSOR_INSTANTIATE

}  // namespace dragoman
