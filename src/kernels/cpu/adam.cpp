// Adam (see adam.h).
#include "kernels/cpu/adam.h"

#include <cmath>

#include "core/numeric.h"

namespace dragoman::cpu {
namespace {

// The update of element i, then written(i, new param[i]) (a mirror's store, or nothing).
template <typename T, typename Written>
void adam_update(T* param, const T* grad, T* m, T* v, std::int64_t n, const AdamHyper& h, Written written) {
  const double correction1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double correction2 = 1.0 - std::pow(h.beta2, static_cast<double>(h.step));
  const T beta1 = static_cast<T>(h.beta1), beta2 = static_cast<T>(h.beta2);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const T g = grad[i];
    m[i] = beta1 * m[i] + (T(1) - beta1) * g;
    v[i] = beta2 * v[i] + (T(1) - beta2) * g * g;
    const double update = (m[i] / correction1) / (std::sqrt(v[i] / correction2) + h.eps) + h.weight_decay * param[i];
    param[i] = static_cast<T>(param[i] - h.lr * update);
    written(i, param[i]);
  }
}

}  // namespace

template <typename T>
void adam_step(T* param, const T* grad, T* m, T* v, std::int64_t n, const AdamHyper& hyper) {
  adam_update(param, grad, m, v, n, hyper, [](std::int64_t, T) {});
}

template <typename M>
void adam_step(float* param, const float* grad, float* m, float* v, std::int64_t n, const AdamHyper& hyper, M* mirror) {
  adam_update(param, grad, m, v, n, hyper, [mirror](std::int64_t i, float p) { mirror[i] = store<M>(p); });
}

template void adam_step<float>(float*, const float*, float*, float*, std::int64_t, const AdamHyper&);
template void adam_step<double>(double*, const double*, double*, double*, std::int64_t, const AdamHyper&);
template void adam_step<bf16>(float*, const float*, float*, float*, std::int64_t, const AdamHyper&, bf16*);
template void adam_step<f16>(float*, const float*, float*, float*, std::int64_t, const AdamHyper&, f16*);

}  // namespace dragoman::cpu
