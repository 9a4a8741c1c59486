// Element-wise ops (see elementwise.h).
#include "ops/elementwise.h"

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/context.h"
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

Tensor relu(const Tensor& x) {
  constexpr const char* kOp = "relu";
  detail::require_like(kOp, "x", x, x);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  switch (x.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cpu::relu_forward<T>(x.data<T>(), y.data<T>(), x.numel());
      });
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(x);
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cuda::relu_forward<T>(x.data<T>(), y.data<T>(), x.numel(), on_device.stream);
      });
      break;
    }
  }
  return y;
}

Tensor relu_backward(const Tensor& y, const Tensor& dy) {
  constexpr const char* kOp = "relu_backward";
  require_same_size(kOp, y, dy);
  Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
  switch (y.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, y, [&](auto zero) {
        using T = decltype(zero);
        cpu::relu_backward<T>(y.data<T>(), dy.data<T>(), dx.data<T>(), y.numel());
      });
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(y);
      detail::dispatch_storage(kOp, y, [&](auto zero) {
        using T = decltype(zero);
        cuda::relu_backward<T>(y.data<T>(), dy.data<T>(), dx.data<T>(), y.numel(), on_device.stream);
      });
      break;
    }
  }
  return dx;
}

Tensor swish(const Tensor& x) {
  constexpr const char* kOp = "swish";
  detail::require_like(kOp, "x", x, x);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  switch (x.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cpu::swish_forward<T>(x.data<T>(), y.data<T>(), x.numel());
      });
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(x);
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cuda::swish_forward<T>(x.data<T>(), y.data<T>(), x.numel(), on_device.stream);
      });
      break;
    }
  }
  return y;
}

Tensor swish_backward(const Tensor& x, const Tensor& dy) {
  constexpr const char* kOp = "swish_backward";
  require_same_size(kOp, x, dy);
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  switch (x.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cpu::swish_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel());
      });
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(x);
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        cuda::swish_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel(), on_device.stream);
      });
      break;
    }
  }
  return dx;
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

double sum_squares(const Tensor& x) {
  constexpr const char* kOp = "sum_squares";
  detail::require_like(kOp, "x", x, x);
  double result = 0;
  switch (x.device().type) {
    case DeviceType::kCpu:
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        result = cpu::sum_squares<T>(x.data<T>(), x.numel());
      });
      break;
    case DeviceType::kCuda: {
      const detail::CudaScope on_device(x);
      // [blocks] partial sums, then the result.
      Tensor sums = Tensor::empty({cuda::sum_squares_blocks(x.numel()) + 1}, DType::kF64, x.device());
      detail::dispatch_storage(kOp, x, [&](auto zero) {
        using T = decltype(zero);
        double* partials = sums.data<double>();
        cuda::sum_squares<T>(x.data<T>(), x.numel(), partials, partials + sums.numel() - 1, on_device.stream);
      });
      result = sums.narrow(0, sums.numel() - 1, 1).to_vector<double>()[0];  // waits for the stream
      break;
    }
  }
  return result;
}

}  // namespace dragoman::ops
