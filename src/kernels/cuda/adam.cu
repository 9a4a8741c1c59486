// Adam on CUDA (see adam.h): one thread per element, grid-stride loop. Compiled without FMA
// contraction (src/CMakeLists.txt), so every operation of kernels/common/adam.h rounds as on the CPU.
#include "kernels/cuda/adam.h"

#include <type_traits>

#include "core/numeric.h"
#include "kernels/common/adam.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.cuh"

namespace dragoman::cuda {
namespace {

// T: the masters' type; M = T: no mirror (mirror is null), else the mirror's type.
template <typename T, typename M>
__global__ void adam_kernel(T* param, const T* grad, T* m, T* v, std::int64_t n, common::AdamScalars<T> s, M* mirror) {
  for (std::int64_t i = launch::first_index(); i < n; i += launch::grid_stride()) {
    T mi = m[i], vi = v[i];
    const T p = common::adam_update(param[i], grad[i], mi, vi, s);
    m[i] = mi;
    v[i] = vi;
    param[i] = p;
    if constexpr (!std::is_same_v<M, T>) mirror[i] = store<M>(p);
  }
}

template <typename T, typename M>
void launch_adam(T* param, const T* grad, T* m, T* v, std::int64_t n, const cpu::AdamHyper& h, M* mirror,
                 Stream stream) {
  if (n <= 0) return;
  const common::AdamScalars<T> s = common::adam_scalars<T>(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step);
  adam_kernel<T, M><<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(param, grad, m, v, n, s, mirror);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

template <typename T>
void adam_step(T* param, const T* grad, T* m, T* v, std::int64_t n, const cpu::AdamHyper& hyper, Stream stream) {
  launch_adam<T, T>(param, grad, m, v, n, hyper, nullptr, stream);
}

template <typename M>
void adam_step(float* param, const float* grad, float* m, float* v, std::int64_t n, const cpu::AdamHyper& hyper,
               M* mirror, Stream stream) {
  launch_adam<float, M>(param, grad, m, v, n, hyper, mirror, stream);
}

template void adam_step<float>(float*, const float*, float*, float*, std::int64_t, const cpu::AdamHyper&, Stream);
template void adam_step<double>(double*, const double*, double*, double*, std::int64_t, const cpu::AdamHyper&, Stream);
template void adam_step<bf16>(float*, const float*, float*, float*, std::int64_t, const cpu::AdamHyper&, bf16*, Stream);
template void adam_step<f16>(float*, const float*, float*, float*, std::int64_t, const cpu::AdamHyper&, f16*, Stream);

}  // namespace dragoman::cuda
