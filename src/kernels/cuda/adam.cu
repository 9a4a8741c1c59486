// Adam on CUDA (see adam.h): one thread per element, grid-stride loop. Compiled without FMA
// contraction (src/CMakeLists.txt), so every operation of kernels/common/adam.h rounds as on the CPU.
#include "kernels/adam.h"

#include <type_traits>

#include "base/numeric.h"
#include "device/cuda/check.h"
#include "kernels/common/adam.h"
#include "kernels/common/clip.h"
#include "kernels/cuda/launch.cuh"

namespace dragoman::cuda {
namespace {

// T: the masters' type; M = T: no mirror (mirror is null), else the mirror's type.
// grad_factor (device memory, may be null: 1) multiplies each gradient first, rounded to T; a
// non-finite factor leaves everything untouched (every thread reads the same double).
template <typename T, typename M>
__global__ void adam_kernel(T* param, const T* grad, T* m, T* v, std::int64_t n, common::AdamScalars<T> s, M* mirror,
                            const double* grad_factor) {
  const double factor = grad_factor != nullptr ? *grad_factor : 1.0;
  if (!common::factor_applies(factor)) return;
  const T scale = static_cast<T>(factor);
  for (std::int64_t i = launch::first_index(); i < n; i += launch::grid_stride()) {
    T mi = m[i], vi = v[i];
    const T p = common::adam_update(param[i], static_cast<T>(grad[i] * scale), mi, vi, s);
    m[i] = mi;
    v[i] = vi;
    param[i] = p;
    if constexpr (!std::is_same_v<M, T>) mirror[i] = store<M>(p);
  }
}

template <typename T, typename M>
void launch_adam(T* param, const T* grad, T* m, T* v, std::int64_t n, const cpu::AdamHyper& h, M* mirror,
                 const double* grad_factor, Stream stream) {
  if (n <= 0) return;
  const common::AdamScalars<T> s = common::adam_scalars<T>(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step);
  adam_kernel<T, M>
      <<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(param, grad, m, v, n, s, mirror, grad_factor);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

template <typename T>
void adam_step(T* param, const T* grad, T* m, T* v, std::int64_t n, const cpu::AdamHyper& hyper,
               const double* grad_factor, Stream stream) {
  launch_adam<T, T>(param, grad, m, v, n, hyper, nullptr, grad_factor, stream);
}

template <typename M>
void adam_step(float* param, const float* grad, float* m, float* v, std::int64_t n, const cpu::AdamHyper& hyper,
               M* mirror, const double* grad_factor, Stream stream) {
  launch_adam<float, M>(param, grad, m, v, n, hyper, mirror, grad_factor, stream);
}

template void adam_step<float>(float*, const float*, float*, float*, std::int64_t, const cpu::AdamHyper&,
                               const double*, Stream);
template void adam_step<double>(double*, const double*, double*, double*, std::int64_t, const cpu::AdamHyper&,
                                const double*, Stream);
template void adam_step<bf16>(float*, const float*, float*, float*, std::int64_t, const cpu::AdamHyper&, bf16*,
                              const double*, Stream);
template void adam_step<f16>(float*, const float*, float*, float*, std::int64_t, const cpu::AdamHyper&, f16*,
                             const double*, Stream);

}  // namespace dragoman::cuda
