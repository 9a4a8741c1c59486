// Adam (see adam.h).
#include "kernels/cpu/adam.h"

#include "core/numeric.h"
#include "kernels/common/adam.h"

namespace dragoman::cpu {
namespace {

// The update of element i, then written(i, new param[i]) (a mirror's store, or nothing).
template <typename T, typename Written>
void adam_update(T* param, const T* grad, T* m, T* v, std::int64_t n, const AdamHyper& h, Written written) {
  const common::AdamScalars<T> s = common::adam_scalars<T>(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    param[i] = common::adam_update(param[i], grad[i], m[i], v[i], s);
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
