// Element-wise ops (see elementwise.h).
#include "ops/elementwise.h"

#include <string>
#include <vector>

#include "kernels/common/clip.h"
#include "kernels/cpu/elementwise.h"
#include "device/cuda/context.h"
#include "kernels/cuda/elementwise.h"
#include "ops/dispatch.h"

namespace dragoman::ops {

using detail::require;

namespace {

void require_same_size(const char* op, const Tensor& a, const Tensor& b) {
  detail::require_like(op, "operand", a, a);
  detail::require_like(op, "operand", b, a);
  require(a.numel() == b.numel(), op, "sizes differ: " + a.describe() + " and " + b.describe());
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  constexpr const char* kOp = "add";
  require_same_size(kOp, a, b);
  Tensor y = Tensor::empty(a.shape(), a.dtype(), a.device());
  switch (a.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, a, [&](auto zero) {
        using T = decltype(zero);
        cpu::add<T>(a.data<T>(), b.data<T>(), y.data<T>(), a.numel());
      });
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(a);
      detail::dispatch_storage(kOp, a, [&](auto zero) {
        using T = decltype(zero);
        cuda::add<T>(a.data<T>(), b.data<T>(), y.data<T>(), a.numel(), on_device.stream);
      });
      break;
    }
  }
  return y;
}

void add_(Tensor& y, const Tensor& x) {
  constexpr const char* kOp = "add_";
  require_same_size(kOp, y, x);
  switch (y.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, y, [&](auto zero) {
        using T = decltype(zero);
        cpu::accumulate<T>(y.data<T>(), x.data<T>(), y.numel());
      });
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(y);
      detail::dispatch_storage(kOp, y, [&](auto zero) {
        using T = decltype(zero);
        cuda::accumulate<T>(y.data<T>(), x.data<T>(), y.numel(), on_device.stream);
      });
      break;
    }
  }
}

void scale_(Tensor& y, double s) {
  constexpr const char* kOp = "scale_";
  detail::require_like(kOp, "y", y, y);
  switch (y.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, y, [&](auto zero) {
        using T = decltype(zero);
        cpu::scale<T>(y.data<T>(), static_cast<acc_t<T>>(s), y.numel());
      });
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(y);
      detail::dispatch_storage(kOp, y, [&](auto zero) {
        using T = decltype(zero);
        cuda::scale<T>(y.data<T>(), static_cast<acc_t<T>>(s), y.numel(), on_device.stream);
      });
      break;
    }
  }
}

namespace {

// An activation (y = f(x)) or its backward (dx = f'(x or y) * dy) on x's device: `run(T{}, out,
// stream)` calls the CPU kernel when stream is null, else the CUDA twin on it.
template <typename Run>
Tensor activation_op(const char* op, const Tensor& x, const Tensor* dy, Run&& run) {
  if (dy != nullptr) {
    require_same_size(op, x, *dy);
  } else {
    detail::require_like(op, "x", x, x);
  }
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.device().is_cpu()) {
    detail::dispatch_storage(op, x, [&](auto zero) { run(zero, out, nullptr); });
  } else {
    const detail::CudaScope on_device(x);
    detail::dispatch_storage(op, x, [&](auto zero) { run(zero, out, &on_device.stream); });
  }
  return out;
}

}  // namespace

Tensor relu(const Tensor& x) {
  return activation_op("relu", x, nullptr, [&](auto zero, Tensor& y, const cuda::Stream* stream) {
    using T = decltype(zero);
    if (stream == nullptr) return cpu::relu_forward<T>(x.data<T>(), y.data<T>(), x.numel());
    cuda::relu_forward<T>(x.data<T>(), y.data<T>(), x.numel(), *stream);
  });
}

Tensor relu_backward(const Tensor& y, const Tensor& dy) {
  return activation_op("relu_backward", y, &dy, [&](auto zero, Tensor& dx, const cuda::Stream* stream) {
    using T = decltype(zero);
    if (stream == nullptr) return cpu::relu_backward<T>(y.data<T>(), dy.data<T>(), dx.data<T>(), y.numel());
    cuda::relu_backward<T>(y.data<T>(), dy.data<T>(), dx.data<T>(), y.numel(), *stream);
  });
}

Tensor swish(const Tensor& x) {
  return activation_op("swish", x, nullptr, [&](auto zero, Tensor& y, const cuda::Stream* stream) {
    using T = decltype(zero);
    if (stream == nullptr) return cpu::swish_forward<T>(x.data<T>(), y.data<T>(), x.numel());
    cuda::swish_forward<T>(x.data<T>(), y.data<T>(), x.numel(), *stream);
  });
}

Tensor swish_backward(const Tensor& x, const Tensor& dy) {
  return activation_op("swish_backward", x, &dy, [&](auto zero, Tensor& dx, const cuda::Stream* stream) {
    using T = decltype(zero);
    if (stream == nullptr) return cpu::swish_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel());
    cuda::swish_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel(), *stream);
  });
}

Tensor dropout(const Tensor& x, double p, std::uint64_t seed, std::uint64_t rng_stream) {
  constexpr const char* kOp = "dropout";
  require(p >= 0 && p < 1, kOp, "probability must be in [0, 1), got " + std::to_string(p));
  if (p == 0) return x;
  detail::require_like(kOp, "x", x, x);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  switch (x.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cpu::dropout<T>(x.data<T>(), y.data<T>(), x.numel(), p, seed, rng_stream);
      });
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(x);
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cuda::dropout<T>(x.data<T>(), y.data<T>(), x.numel(), p, seed, rng_stream, on_device.stream);
      });
      break;
    }
  }
  return y;
}

Tensor dropout_add(const Tensor& x, const Tensor& y, double p, std::uint64_t seed, std::uint64_t rng_stream) {
  constexpr const char* kOp = "dropout_add";
  require(p >= 0 && p < 1, kOp, "probability must be in [0, 1), got " + std::to_string(p));
  if (p == 0) return add(x, y);
  require_same_size(kOp, x, y);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  switch (x.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cpu::dropout_add<T>(x.data<T>(), y.data<T>(), out.data<T>(), x.numel(), p, seed, rng_stream);
      });
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(x);
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cuda::dropout_add<T>(x.data<T>(), y.data<T>(), out.data<T>(), x.numel(), p, seed, rng_stream, on_device.stream);
      });
      break;
    }
  }
  return out;
}

namespace {

// The sum of squares of a GPU tensor, left on its device: [blocks] partial sums, then the sum (at
// element `blocks`), then `extra` doubles for the caller. Asynchronous on the device's stream.
Tensor sum_squares_on_device(const char* op, const Tensor& x, std::int64_t extra, const cuda::Stream stream) {
  const std::int64_t blocks = cuda::sum_squares_blocks(x.numel());
  Tensor work = Tensor::empty({blocks + 1 + extra}, DType::kF64, x.device());
  detail::dispatch_storage(op, x, [&](auto zero) {
    using T = decltype(zero);
    double* partials = work.data<double>();
    cuda::sum_squares<T>(x.data<T>(), x.numel(), partials, partials + blocks, stream);
  });
  return work;
}

}  // namespace

double sum_squares(const Tensor& x) {
  constexpr const char* kOp = "sum_squares";
  detail::require_like(kOp, "x", x, x);
  if (x.device().is_cpu()) {
    double result = 0;
    detail::dispatch_storage(kOp, x, [&](auto zero) {
      using T = decltype(zero);
      result = cpu::sum_squares<T>(x.data<T>(), x.numel());
    });
    return result;
  }
  const detail::CudaScope on_device(x);
  const Tensor work = sum_squares_on_device(kOp, x, 0, on_device.stream);
  return work.narrow(0, work.numel() - 1, 1).to_vector<double>()[0];  // waits for the stream
}

Tensor grad_norm_factor(const Tensor& grads, double clip_norm, double loss_scale) {
  constexpr const char* kOp = "grad_norm_factor";
  detail::require_like(kOp, "grads", grads, grads);
  require(loss_scale > 0, kOp, "the loss scale must be positive, got " + std::to_string(loss_scale));
  if (grads.device().is_cpu()) {
    const common::NormFactor r = common::norm_factor(sum_squares(grads), clip_norm, loss_scale);
    return Tensor::from_vector(std::vector<double>{r.norm, r.factor}, {2});
  }
  const detail::CudaScope on_device(grads);
  Tensor work = sum_squares_on_device(kOp, grads, 2, on_device.stream);  // then {norm, factor}
  const std::int64_t sum = work.numel() - 3;
  double* values = work.data<double>();
  cuda::norm_factor(values + sum, clip_norm, loss_scale, values + sum + 1, on_device.stream);
  return work.narrow(0, sum + 1, 2);
}

}  // namespace dragoman::ops
