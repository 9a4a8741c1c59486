// Layer normalisation (see layer_norm.h for the formulas and the rounding points).
#include "kernels/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/common/layer_norm.h"
#include "kernels/cpu/vector_math.h"

namespace dragoman::cpu {

namespace {

// One row: its statistics and y (which may be x: each element is read before it is written).
template <typename T>
void normalize_row(const T* xr, const T* weight, const T* bias, T* yr, acc_t<T>* mean, acc_t<T>* rstd, std::int64_t d,
                   double eps) {
  using A = acc_t<T>;
  const A n = static_cast<A>(d), e = static_cast<A>(eps);
  A sum = 0, sq = 0;
  if constexpr (std::is_same_v<T, float>) {
    sum = sum_f32(xr, d);  // in 16 lanes (vector_math.h)
  } else {
    for (std::int64_t i = 0; i < d; ++i) sum += load(xr[i]);
  }
  const A mu = sum / n;
  if constexpr (std::is_same_v<T, float>) {
    sq = sum_squared_deviations_f32(xr, d, mu);
  } else {
    for (std::int64_t i = 0; i < d; ++i) sq += (load(xr[i]) - mu) * (load(xr[i]) - mu);
  }
  const A rs = A(1) / std::sqrt(sq / n + e);
  for (std::int64_t i = 0; i < d; ++i)
    yr[i] = store<T>(common::layer_norm_output(load(xr[i]), mu, rs, load(weight[i]), load(bias[i])));
  *mean = mu;
  *rstd = rs;
}

}  // namespace

template <typename T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, acc_t<T>* mean, acc_t<T>* rstd,
                        std::int64_t rows, std::int64_t d, double eps) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) normalize_row(x + r * d, weight, bias, y + r * d, mean + r, rstd + r, d, eps);
}

template <typename T>
void add_layer_norm_forward(const T* x, const T* residual, const T* weight, const T* bias, T* y, std::int64_t rows,
                            std::int64_t d, double eps) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    T* yr = y + r * d;
    const T *xr = x + r * d, *rr = residual + r * d;
    for (std::int64_t i = 0; i < d; ++i) yr[i] = store<T>(load(xr[i]) + load(rr[i]));  // cpu::add's sum
    acc_t<T> mean = 0, rstd = 0;
    normalize_row(yr, weight, bias, yr, &mean, &rstd, d, eps);
  }
}

template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* weight, const acc_t<T>* mean, const acc_t<T>* rstd, T* dx,
                         acc_t<T>* dweight, acc_t<T>* dbias, std::int64_t rows, std::int64_t d) {
  using A = acc_t<T>;
  const A n = static_cast<A>(d);
  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight.
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* dyr = dy + r * d;
    const T* xr = x + r * d;
    A g_sum = 0, gx_sum = 0;
    if constexpr (std::is_same_v<T, float>) {
      float sums[2];
      layer_norm_sums_f32(dyr, weight, xr, d, mean[r], rstd[r], sums);  // in 16 lanes (vector_math.h)
      g_sum = sums[0];
      gx_sum = sums[1];
    } else {
      for (std::int64_t i = 0; i < d; ++i) {
        const A xhat = common::layer_norm_xhat(load(xr[i]), mean[r], rstd[r]);
        const A g = load(dyr[i]) * load(weight[i]);
        g_sum += g;
        gx_sum += g * xhat;
      }
    }
    const A g_mean = g_sum / n, gx_mean = gx_sum / n;
    T* dxr = dx + r * d;
    for (std::int64_t i = 0; i < d; ++i) {
      const A xhat = common::layer_norm_xhat(load(xr[i]), mean[r], rstd[r]);
      dxr[i] = store<T>(common::layer_norm_dx(load(dyr[i]), load(weight[i]), xhat, rstd[r], g_mean, gx_mean));
    }
  }
  // Parameter gradients: columns across threads, rows in order.
  constexpr std::int64_t kBlock = 64;
  const std::int64_t blocks = (d + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t c0 = blk * kBlock, c1 = std::min(d, c0 + kBlock);
    A dw[kBlock] = {}, db[kBlock] = {};
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = c0; c < c1; ++c) {
        const A g = load(dy[r * d + c]);
        dw[c - c0] += common::layer_norm_dweight_term(g, load(x[r * d + c]), mean[r], rstd[r]);
        db[c - c0] += g;
      }
    }
    for (std::int64_t c = c0; c < c1; ++c) {
      dweight[c] += dw[c - c0];
      dbias[c] += db[c - c0];
    }
  }
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                       \
  template void layer_norm_forward<T>(const T*, const T*, const T*, T*, acc_t<T>*, acc_t<T>*, std::int64_t,           \
                                      std::int64_t, double);                                                          \
  template void add_layer_norm_forward<T>(const T*, const T*, const T*, const T*, T*, std::int64_t, std::int64_t,     \
                                          double);                                                                    \
  template void layer_norm_backward<T>(const T*, const T*, const T*, const acc_t<T>*, const acc_t<T>*, T*, acc_t<T>*, \
                                       acc_t<T>*, std::int64_t, std::int64_t);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cpu
