// Adam (see adam.h).
#include "kernels/adam.h"

#include <algorithm>
#include <type_traits>

#include "base/numeric.h"
#include "kernels/common/adam.h"
#include "kernels/common/clip.h"
#include "kernels/cpu/vector_math.h"

namespace dragoman::cpu {
namespace {

// The update of element i, then written(i, new param[i]) (a mirror's store, or nothing).
template <typename T, typename Written>
void adam_update(T* param, const T* grad, T* m, T* v, std::int64_t n, const AdamHyper& h, double grad_factor,
                 Written written) {
  if (!common::factor_applies(grad_factor)) return;
  const common::AdamScalars<T> s = common::adam_scalars<T>(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step);
  const T scale = static_cast<T>(grad_factor);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    param[i] = common::adam_update(param[i], static_cast<T>(grad[i] * scale), m[i], v[i], s);
    written(i, param[i]);
  }
}

// f32: blocks of 4,096 elements through the vector kernel (vector_math.h: the same bits), then
// written(begin, end) over each; a factor other than 1 scales each block's gradients into a
// buffer first.
template <typename Written>
void adam_update_f32(float* param, const float* grad, float* m, float* v, std::int64_t n, const AdamHyper& h,
                     double grad_factor, Written written) {
  constexpr std::int64_t kBlock = 4096;
  if (!common::factor_applies(grad_factor)) return;
  const common::AdamScalars<float> s =
      common::adam_scalars<float>(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step);
  const float scale = static_cast<float>(grad_factor);
#pragma omp parallel for schedule(static)
  for (std::int64_t begin = 0; begin < n; begin += kBlock) {
    const std::int64_t end = std::min(n, begin + kBlock);
    if (grad_factor == 1.0) {
      adam_f32(param + begin, grad + begin, m + begin, v + begin, end - begin, s);
    } else {
      float scaled[kBlock];
      for (std::int64_t i = begin; i < end; ++i) scaled[i - begin] = grad[i] * scale;
      adam_f32(param + begin, scaled, m + begin, v + begin, end - begin, s);
    }
    written(begin, end);
  }
}

}  // namespace

template <typename T>
void adam_step(T* param, const T* grad, T* m, T* v, std::int64_t n, const AdamHyper& hyper, double grad_factor) {
  if constexpr (std::is_same_v<T, float>) {
    adam_update_f32(param, grad, m, v, n, hyper, grad_factor, [](std::int64_t, std::int64_t) {});
  } else {
    adam_update(param, grad, m, v, n, hyper, grad_factor, [](std::int64_t, T) {});
  }
}

template <typename M>
void adam_step(float* param, const float* grad, float* m, float* v, std::int64_t n, const AdamHyper& hyper, M* mirror,
               double grad_factor) {
  adam_update_f32(param, grad, m, v, n, hyper, grad_factor, [param, mirror](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) mirror[i] = store<M>(param[i]);
  });
}

template void adam_step<float>(float*, const float*, float*, float*, std::int64_t, const AdamHyper&, double);
template void adam_step<double>(double*, const double*, double*, double*, std::int64_t, const AdamHyper&, double);
template void adam_step<bf16>(float*, const float*, float*, float*, std::int64_t, const AdamHyper&, bf16*, double);
template void adam_step<f16>(float*, const float*, float*, float*, std::int64_t, const AdamHyper&, f16*, double);

}  // namespace dragoman::cpu
