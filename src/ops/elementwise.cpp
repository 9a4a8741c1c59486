// Element-wise ops (see elementwise.h).
#include "ops/elementwise.h"

#include <string>
#include <vector>

#include "device/cuda/context.h"
#include "kernels/common/clip.h"
#include "kernels/elementwise.h"
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
  detail::on_device(
      kOp, a,
      [&] {
        detail::dispatch_storage(kOp, a, [&](auto zero) {
          using T = decltype(zero);
          cpu::add<T>(a.data<T>(), b.data<T>(), y.data<T>(), a.numel());
        });
      },
      [&](auto stream) {
        detail::dispatch_storage(kOp, a, [&](auto zero) {
          using T = decltype(zero);
          cuda::add<T>(a.data<T>(), b.data<T>(), y.data<T>(), a.numel(), stream);
        });
      });
  return y;
}

void add_(Tensor& y, const Tensor& x) {
  constexpr const char* kOp = "add_";
  require_same_size(kOp, y, x);
  detail::on_device(
      kOp, y,
      [&] {
        detail::dispatch_storage(kOp, y, [&](auto zero) {
          using T = decltype(zero);
          cpu::accumulate<T>(y.data<T>(), x.data<T>(), y.numel());
        });
      },
      [&](auto stream) {
        detail::dispatch_storage(kOp, y, [&](auto zero) {
          using T = decltype(zero);
          cuda::accumulate<T>(y.data<T>(), x.data<T>(), y.numel(), stream);
        });
      });
}

void scale_(Tensor& y, double s) {
  constexpr const char* kOp = "scale_";
  detail::require_like(kOp, "y", y, y);
  detail::on_device(
      kOp, y,
      [&] {
        detail::dispatch_storage(kOp, y, [&](auto zero) {
          using T = decltype(zero);
          cpu::scale<T>(y.data<T>(), static_cast<acc_t<T>>(s), y.numel());
        });
      },
      [&](auto stream) {
        detail::dispatch_storage(kOp, y, [&](auto zero) {
          using T = decltype(zero);
          cuda::scale<T>(y.data<T>(), static_cast<acc_t<T>>(s), y.numel(), stream);
        });
      });
}

namespace {

// An activation (y = f(x)) or its backward (dx = f'(x or y) * dy) on x's device: on_cpu(T{}, out)
// calls the CPU kernel for the storage type T, on_cuda(T{}, out, stream) the CUDA twin.
template <typename OnCpu, typename OnCuda>
Tensor activation_op(const char* op, const Tensor& x, const Tensor* dy, OnCpu&& on_cpu, OnCuda&& on_cuda) {
  if (dy != nullptr) {
    require_same_size(op, x, *dy);
  } else {
    detail::require_like(op, "x", x, x);
  }
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  detail::on_device(
      op, x, [&] { detail::dispatch_storage(op, x, [&](auto zero) { on_cpu(zero, out); }); },
      [&](auto stream) { detail::dispatch_storage(op, x, [&](auto zero) { on_cuda(zero, out, stream); }); });
  return out;
}

}  // namespace

Tensor relu(const Tensor& x) {
  return activation_op(
      "relu", x, nullptr,
      [&](auto zero, Tensor& y) {
        using T = decltype(zero);
        cpu::relu_forward<T>(x.data<T>(), y.data<T>(), x.numel());
      },
      [&](auto zero, Tensor& y, auto stream) {
        using T = decltype(zero);
        cuda::relu_forward<T>(x.data<T>(), y.data<T>(), x.numel(), stream);
      });
}

Tensor relu_backward(const Tensor& y, const Tensor& dy) {
  return activation_op(
      "relu_backward", y, &dy,
      [&](auto zero, Tensor& dx) {
        using T = decltype(zero);
        cpu::relu_backward<T>(y.data<T>(), dy.data<T>(), dx.data<T>(), y.numel());
      },
      [&](auto zero, Tensor& dx, auto stream) {
        using T = decltype(zero);
        cuda::relu_backward<T>(y.data<T>(), dy.data<T>(), dx.data<T>(), y.numel(), stream);
      });
}

Tensor swish(const Tensor& x) {
  return activation_op(
      "swish", x, nullptr,
      [&](auto zero, Tensor& y) {
        using T = decltype(zero);
        cpu::swish_forward<T>(x.data<T>(), y.data<T>(), x.numel());
      },
      [&](auto zero, Tensor& y, auto stream) {
        using T = decltype(zero);
        cuda::swish_forward<T>(x.data<T>(), y.data<T>(), x.numel(), stream);
      });
}

Tensor swish_backward(const Tensor& x, const Tensor& dy) {
  return activation_op(
      "swish_backward", x, &dy,
      [&](auto zero, Tensor& dx) {
        using T = decltype(zero);
        cpu::swish_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel());
      },
      [&](auto zero, Tensor& dx, auto stream) {
        using T = decltype(zero);
        cuda::swish_backward<T>(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel(), stream);
      });
}

Tensor dropout(const Tensor& x, double p, std::uint64_t seed, std::uint64_t rng_stream) {
  constexpr const char* kOp = "dropout";
  require(p >= 0 && p < 1, kOp, "probability must be in [0, 1), got " + std::to_string(p));
  if (p == 0) return x;
  detail::require_like(kOp, "x", x, x);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  detail::on_device(
      kOp, x,
      [&] {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          cpu::dropout<T>(x.data<T>(), y.data<T>(), x.numel(), p, seed, rng_stream);
        });
      },
      [&](auto stream) {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          cuda::dropout<T>(x.data<T>(), y.data<T>(), x.numel(), p, seed, rng_stream, stream);
        });
      });
  return y;
}

Tensor dropout_add(const Tensor& x, const Tensor& y, double p, std::uint64_t seed, std::uint64_t rng_stream) {
  constexpr const char* kOp = "dropout_add";
  require(p >= 0 && p < 1, kOp, "probability must be in [0, 1), got " + std::to_string(p));
  if (p == 0) return add(x, y);
  require_same_size(kOp, x, y);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  detail::on_device(
      kOp, x,
      [&] {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          cpu::dropout_add<T>(x.data<T>(), y.data<T>(), out.data<T>(), x.numel(), p, seed, rng_stream);
        });
      },
      [&](auto stream) {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          cuda::dropout_add<T>(x.data<T>(), y.data<T>(), out.data<T>(), x.numel(), p, seed, rng_stream, stream);
        });
      });
  return out;
}

namespace {

// The sum of squares of a GPU tensor, left on its device: [blocks] partial sums, then the sum (at
// element `blocks`), then `extra` doubles for the caller. Asynchronous on the device's stream. A
// template on the stream's type, so that only a build with CUDA instantiates it (ops::detail::on_device).
template <typename Stream>
Tensor sum_squares_on_device(const char* op, const Tensor& x, std::int64_t extra, Stream stream) {
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
  double result = 0;
  detail::on_device(
      kOp, x,
      [&] {
        detail::dispatch_storage(kOp, x, [&](auto zero) {
          using T = decltype(zero);
          result = cpu::sum_squares<T>(x.data<T>(), x.numel());
        });
      },
      [&](auto stream) {
        const Tensor work = sum_squares_on_device(kOp, x, 0, stream);
        result = work.narrow(0, work.numel() - 1, 1).to_vector<double>()[0];  // waits for the stream
      });
  return result;
}

Tensor grad_norm_factor(const Tensor& grads, double clip_norm, double loss_scale) {
  constexpr const char* kOp = "grad_norm_factor";
  detail::require_like(kOp, "grads", grads, grads);
  require(loss_scale > 0, kOp, "the loss scale must be positive, got " + std::to_string(loss_scale));
  Tensor result;
  detail::on_device(
      kOp, grads,
      [&] {
        const common::NormFactor r = common::norm_factor(sum_squares(grads), clip_norm, loss_scale);
        result = Tensor::from_vector(std::vector<double>{r.norm, r.factor}, {2});
      },
      [&](auto stream) {
        Tensor work = sum_squares_on_device(kOp, grads, 2, stream);  // then {norm, factor}
        const std::int64_t sum = work.numel() - 3;
        double* values = work.data<double>();
        cuda::norm_factor(values + sum, clip_norm, loss_scale, values + sum + 1, stream);
        result = work.narrow(0, sum + 1, 2);
      });
  return result;
}

}  // namespace dragoman::ops
