// Tensor views and copies (see tensor.h).
#include "core/tensor.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

#include "base/error.h"
#include "core/allocator.h"
#include "core/strided_copy.h"
#include "device/cuda/cast.h"
#include "device/cuda/context.h"
#include "device/cuda/copy.h"
#include "device/cuda/memory.h"

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
    : allocator_(&allocator_for(device)), data_(nullptr), bytes_(bytes), device_(device) {
  cuda::Stream stream = nullptr;  // the CPU's one
  if constexpr (kWithCuda) {
    if (!device.is_cpu()) stream = cuda::stream_of(device.index);
  }
  data_ = allocator_->allocate(bytes, stream);
}

Storage::~Storage() { allocator_->deallocate(data_, bytes_); }

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

const void* Tensor::raw_data() const {
  if (!defined()) throw Error("use of an undefined tensor");
  return static_cast<const char*>(storage_->data()) + offset_ * static_cast<std::int64_t>(dtype_size(dtype_));
}

template <typename T>
const T* Tensor::data() const {
  if (dtype_ != dtype_of<T>()) {
    throw Error(std::string("tensor of dtype ") + dtype_name(dtype_) + " accessed as " + dtype_name(dtype_of<T>()));
  }
  return static_cast<const T*>(raw_data());
}

// The non-const accessors are the const ones with the result made writable: the same address, and
// the storage itself is never const (Storage::data()).
void* Tensor::raw_data() { return const_cast<void*>(std::as_const(*this).raw_data()); }

template <typename T>
T* Tensor::data() {
  return const_cast<T*>(std::as_const(*this).data<T>());
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

std::int64_t Tensor::capacity(int d) const {
  const auto i = static_cast<std::size_t>(d < 0 ? d + rank() : d);
  const std::int64_t size = dim(d);
  if (!defined() || strides_[i] <= 0) return size;
  // Elements from the offset to the storage's end, less the extent of every other dimension.
  const auto elements = static_cast<std::int64_t>(storage_->bytes() / dtype_size(dtype_)) - offset_;
  std::int64_t others = 1;
  for (std::size_t j = 0; j < shape_.size(); ++j) {
    if (j == i) continue;
    if (shape_[j] == 0) return size;
    others += (shape_[j] - 1) * strides_[j];
  }
  if (elements < others) return size;
  std::int64_t most = (elements - others) / strides_[i] + 1;
  if (i > 0 && strides_[i - 1] > 0) most = std::min(most, strides_[i - 1] / strides_[i]);
  return std::max(size, most);
}

Tensor Tensor::widen(int d, std::int64_t length) const {
  const auto i = static_cast<std::size_t>(d < 0 ? d + rank() : d);
  if (length < 0 || length > capacity(d)) {
    throw Error("widen(" + std::to_string(d) + ", " + std::to_string(length) + ") beyond the storage of " + describe());
  }
  Tensor t = *this;
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

// A copy as one plain or pitched (2D) memcpy: `height` rows of `width` bytes, rows `src_pitch` and
// `dst_pitch` bytes apart. nullopt when the views need the strided kernel. cudaMemcpy2D wants
// pitch >= width and pitches below 2^31.
struct Pitched {
  std::size_t width, height, src_pitch, dst_pitch;
};

std::optional<Pitched> as_pitched(const CollapsedCopy& c, std::size_t elem) {
  const auto bytes = [elem](std::int64_t elements) { return static_cast<std::size_t>(elements) * elem; };
  if (c.shape.empty()) return Pitched{elem, 1, elem, elem};  // one element
  if (c.shape.size() == 1 && c.src_strides[0] == 1 && c.dst_strides[0] == 1) {
    return Pitched{bytes(c.shape[0]), 1, bytes(c.shape[0]), bytes(c.shape[0])};
  }
  Pitched p{};
  if (c.shape.size() == 1) {  // rows of one element
    p = {elem, static_cast<std::size_t>(c.shape[0]), bytes(c.src_strides[0]), bytes(c.dst_strides[0])};
  } else if (c.shape.size() == 2 && c.src_strides[1] == 1 && c.dst_strides[1] == 1) {
    p = {bytes(c.shape[1]), static_cast<std::size_t>(c.shape[0]), bytes(c.src_strides[0]), bytes(c.dst_strides[0])};
  } else {
    return std::nullopt;
  }
  constexpr std::size_t kMaxPitch = (std::size_t{1} << 31) - 1;
  if (p.src_pitch < p.width || p.dst_pitch < p.width || p.src_pitch > kMaxPitch || p.dst_pitch > kMaxPitch) {
    return std::nullopt;
  }
  return p;
}

// dst <- src where at least one is on a GPU, both on the same device or one on the host. Dense or
// pitched views: one (2D) memcpy. Other views on one device: the strided kernel. Other views
// between host and device: made dense on the side that has them, then the dense copy.
void copy_with_gpu(Tensor& dst, const Tensor& src) {
  if constexpr (kWithCuda) {
    const Device device = dst.device().is_cpu() ? src.device() : dst.device();
    const std::size_t elem = dtype_size(dst.dtype());
    const CollapsedCopy c = collapse_copy(dst.shape(), src.strides(), dst.strides());
    const std::optional<Pitched> pitched = as_pitched(c, elem);
    if (!pitched && src.device() != dst.device()) {
      if (src.device().is_cpu()) {  // host view -> dense host -> dense device -> device view
        Tensor staged = Tensor::empty(dst.shape(), dst.dtype(), device);
        staged.copy_from(src.contiguous());
        dst.copy_from(staged);
      } else {  // device view -> dense device -> dense host -> host view
        Tensor staged = Tensor::empty(dst.shape(), dst.dtype());
        staged.copy_from(src.contiguous());
        dst.copy_from(staged);
      }
      return;
    }
    const cuda::DeviceGuard guard(device.index);
    const cuda::Stream stream = cuda::stream_of(device.index);
    if (!pitched) {
      cuda::copy_strided(src.raw_data(), c.src_strides.data(), dst.raw_data(), c.dst_strides.data(), c.shape.data(),
                         static_cast<int>(c.shape.size()), elem, stream);
    } else if (pitched->height == 1) {
      cuda::copy_async(dst.raw_data(), src.raw_data(), pitched->width, stream);
    } else {
      cuda::copy_2d_async(dst.raw_data(), pitched->dst_pitch, src.raw_data(), pitched->src_pitch, pitched->width,
                          pitched->height, stream);
    }
    // Host code reads a CPU tensor as soon as this returns. (A host source needs no wait: the driver
    // has taken pageable memory's bytes when the call returns.)
    if (dst.device().is_cpu()) cuda::stream_synchronize(stream);
  } else {
    throw_no_cuda("copy to or from a GPU");
  }
}

// dst <- src on two different GPUs, through a dense copy of src. Synchronous: the dense source
// belongs to src's stream and is freed on return, so the copy on dst's stream must be done by then.
// (Rare: parameter broadcasts and checkpoints, not per step.)
void copy_between_gpus(Tensor& dst, const Tensor& src) {
  if constexpr (kWithCuda) {
    const int from = src.device().index, to = dst.device().index;
    const Tensor dense_src = src.contiguous();
    cuda::synchronize(from);  // the source's producers on its own stream are done
    Tensor dense_dst = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), dst.device());
    {
      const cuda::DeviceGuard guard(to);
      cuda::copy_peer_async(dense_dst.raw_data(), to, dense_src.raw_data(), from, dst.nbytes(), cuda::stream_of(to));
      cuda::synchronize(to);
    }
    if (!dense_dst.shares_storage(dst)) dst.copy_from(dense_dst);
  } else {
    throw_no_cuda("copy between GPUs");
  }
}

}  // namespace

void Tensor::copy_from(const Tensor& src) {
  if (src.shape_ != shape_ || src.dtype_ != dtype_) {
    throw Error("copy_from: source " + src.describe() + " does not match destination " + describe());
  }
  if (numel() == 0) return;
  if (device_.is_cpu() && src.device_.is_cpu()) {
    if (is_contiguous() && src.is_contiguous()) {
      std::memmove(raw_data(), src.raw_data(), nbytes());
    } else {
      copy_strided(src.raw_data(), src.strides_.data(), raw_data(), strides_.data(), shape_.data(), rank(),
                   dtype_size(dtype_));
    }
    return;
  }
  if (!device_.is_cpu() && !src.device_.is_cpu() && device_ != src.device_) {
    copy_between_gpus(*this, src);
  } else {
    copy_with_gpu(*this, src);
  }
}

void Tensor::fill_zero() {
  if (numel() == 0) return;
  if (!is_contiguous()) {
    copy_from(Tensor::zeros(shape_, dtype_, device_));
    return;
  }
  if (device_.is_cpu()) {
    std::memset(raw_data(), 0, nbytes());
    return;
  }
  if constexpr (kWithCuda) {
    const cuda::DeviceGuard guard(device_.index);
    cuda::memset_async(raw_data(), 0, nbytes(), cuda::stream_of(device_.index));
  } else {
    throw_no_cuda("fill_zero on a GPU");
  }
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

// Calls fn(T*) with the tensor's data pointer typed by its dtype (the numeric dtypes): const T* for
// a const Tensor.
template <typename TensorT, typename Fn>
void with_typed_data(TensorT& t, Fn fn) {
  switch (t.dtype()) {
    case DType::kF32: fn(t.template data<float>()); return;
    case DType::kF64: fn(t.template data<double>()); return;
    case DType::kI32: fn(t.template data<std::int32_t>()); return;
    case DType::kBF16: fn(t.template data<bf16>()); return;
    case DType::kF16: fn(t.template data<f16>()); return;
    case DType::kU8:
    case DType::kI8: break;
  }
  throw Error(std::string("dtype conversion of ") + dtype_name(t.dtype()) + " is not supported");
}

// On a GPU: the cast kernels (f32 <-> bf16/f16), asynchronous on the device's stream.
Tensor cast_on_gpu(const Tensor& src, DType dtype) {
  if constexpr (kWithCuda) {
    Tensor out = Tensor::empty(src.shape(), dtype, src.device());
    const std::size_t n = static_cast<std::size_t>(src.numel());
    const cuda::DeviceGuard guard(src.device().index);
    const cuda::Stream stream = cuda::stream_of(src.device().index);
    const DType from = src.dtype();
    if (from == DType::kF32 && dtype == DType::kBF16) {
      cuda::cast(src.data<float>(), out.data<bf16>(), n, stream);
    } else if (from == DType::kF32 && dtype == DType::kF16) {
      cuda::cast(src.data<float>(), out.data<f16>(), n, stream);
    } else if (from == DType::kBF16 && dtype == DType::kF32) {
      cuda::cast(src.data<bf16>(), out.data<float>(), n, stream);
    } else if (from == DType::kF16 && dtype == DType::kF32) {
      cuda::cast(src.data<f16>(), out.data<float>(), n, stream);
    } else {
      throw Error("dtype conversion of " + src.describe() + " to " + dtype_name(dtype) +
                  ": on a GPU only f32 <-> bf16/f16 (convert on the CPU)");
    }
    return out;
  } else {
    throw_no_cuda("dtype conversion on a GPU");
  }
}

}  // namespace

Tensor Tensor::to(DType dtype) const {
  const Tensor src = contiguous();
  if (dtype == dtype_) return src.clone();
  if (!device_.is_cpu()) return cast_on_gpu(src, dtype);
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

#define DRAGOMAN_TENSOR_INSTANTIATE(T)                                         \
  template Tensor Tensor::from_vector<T>(const std::vector<T>&, const Shape&); \
  template T* Tensor::data<T>();                                               \
  template const T* Tensor::data<T>() const;                                   \
  template std::vector<T> Tensor::to_vector<T>() const;
DRAGOMAN_TENSOR_INSTANTIATE(float)
DRAGOMAN_TENSOR_INSTANTIATE(double)
DRAGOMAN_TENSOR_INSTANTIATE(std::int32_t)
DRAGOMAN_TENSOR_INSTANTIATE(std::uint8_t)
DRAGOMAN_TENSOR_INSTANTIATE(std::int8_t)
DRAGOMAN_TENSOR_INSTANTIATE(bf16)
DRAGOMAN_TENSOR_INSTANTIATE(f16)
#undef DRAGOMAN_TENSOR_INSTANTIATE

}  // namespace dragoman
