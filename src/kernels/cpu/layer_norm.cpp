// Layer normalisation (see layer_norm.h).
#include "kernels/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dragoman::cpu {

template <typename T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, T* mean, T* rstd, std::int64_t rows,
                        std::int64_t d, double eps) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * d;
    double sum = 0;
    for (std::int64_t i = 0; i < d; ++i) sum += xr[i];
    const double mu = sum / static_cast<double>(d);
    double sq = 0;
    for (std::int64_t i = 0; i < d; ++i) sq += (xr[i] - mu) * (xr[i] - mu);
    const double rs = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
    T* yr = y + r * d;
    for (std::int64_t i = 0; i < d; ++i) yr[i] = static_cast<T>((xr[i] - mu) * rs) * weight[i] + bias[i];
    mean[r] = static_cast<T>(mu);
    rstd[r] = static_cast<T>(rs);
  }
}

template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* weight, const T* mean, const T* rstd, T* dx, T* dweight,
                         T* dbias, std::int64_t rows, std::int64_t d) {
  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight.
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* dyr = dy + r * d;
    const T* xr = x + r * d;
    double g_sum = 0, gx_sum = 0;
    for (std::int64_t i = 0; i < d; ++i) {
      const double xhat = (xr[i] - mean[r]) * rstd[r];
      const double g = dyr[i] * weight[i];
      g_sum += g;
      gx_sum += g * xhat;
    }
    const double g_mean = g_sum / static_cast<double>(d), gx_mean = gx_sum / static_cast<double>(d);
    T* dxr = dx + r * d;
    for (std::int64_t i = 0; i < d; ++i) {
      const double xhat = (xr[i] - mean[r]) * rstd[r];
      dxr[i] = static_cast<T>(rstd[r] * (dyr[i] * weight[i] - g_mean - xhat * gx_mean));
    }
  }
  // Parameter gradients: columns across threads, rows in order.
  constexpr std::int64_t kBlock = 64;
  const std::int64_t blocks = (d + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t c0 = blk * kBlock, c1 = std::min(d, c0 + kBlock);
    T dw[kBlock] = {}, db[kBlock] = {};
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = c0; c < c1; ++c) {
        const T g = dy[r * d + c];
        dw[c - c0] += g * (x[r * d + c] - mean[r]) * rstd[r];
        db[c - c0] += g;
      }
    }
    for (std::int64_t c = c0; c < c1; ++c) {
      dweight[c] += dw[c - c0];
      dbias[c] += db[c - c0];
    }
  }
}

template void layer_norm_forward<float>(const float*, const float*, const float*, float*, float*, float*,
                                        std::int64_t, std::int64_t, double);
template void layer_norm_forward<double>(const double*, const double*, const double*, double*, double*, double*,
                                         std::int64_t, std::int64_t, double);
template void layer_norm_backward<float>(const float*, const float*, const float*, const float*, const float*,
                                         float*, float*, float*, std::int64_t, std::int64_t);
template void layer_norm_backward<double>(const double*, const double*, const double*, const double*,
                                          const double*, double*, double*, double*, std::int64_t, std::int64_t);

}  // namespace dragoman::cpu
