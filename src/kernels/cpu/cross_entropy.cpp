// log-softmax and label-smoothed cross-entropy (see cross_entropy.h).
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dragoman::cpu {

template <typename T>
void log_softmax(T* x, std::int64_t rows, std::int64_t v) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = x + r * v;
    const double max_value = *std::max_element(row, row + v);
    double sum = 0;
    for (std::int64_t k = 0; k < v; ++k) sum += std::exp(row[k] - max_value);
    const double log_z = max_value + std::log(sum);
    for (std::int64_t k = 0; k < v; ++k) row[k] = static_cast<T>(row[k] - log_z);
  }
}

template <typename T>
void cross_entropy_forward(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v,
                           std::int32_t pad, double smoothing, double* loss_sum, double* nll_sum) {
  log_softmax(logits, rows, v);
  std::vector<double> loss(static_cast<std::size_t>(rows), 0.0), nll(static_cast<std::size_t>(rows), 0.0);
  const double off = v > 1 ? smoothing / static_cast<double>(v - 1) : 0.0;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int32_t y = targets[r];
    if (y == pad) continue;
    const T* lp = logits + r * v;
    double sum_lp = 0;  // over k != pad
    for (std::int64_t k = 0; k < v; ++k) sum_lp += lp[k];
    if (pad >= 0 && pad < v) sum_lp -= lp[pad];
    nll[static_cast<std::size_t>(r)] = -static_cast<double>(lp[y]);
    loss[static_cast<std::size_t>(r)] = -(1.0 - smoothing) * lp[y] - off * sum_lp;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    *loss_sum += loss[static_cast<std::size_t>(r)];
    *nll_sum += nll[static_cast<std::size_t>(r)];
  }
}

template <typename T>
void cross_entropy_backward(T* log_probs, const std::int32_t* targets, std::int64_t rows, std::int64_t v,
                            std::int32_t pad, double smoothing, double grad_scale) {
  const double off = v > 1 ? smoothing / static_cast<double>(v - 1) : 0.0;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = log_probs + r * v;
    const std::int32_t y = targets[r];
    if (y == pad) {
      std::fill(row, row + v, T(0));
      continue;
    }
    for (std::int64_t k = 0; k < v; ++k) {
      const double q = (k == y ? 1.0 - smoothing : 0.0) + (k != pad ? off : 0.0);
      row[k] = static_cast<T>(grad_scale * (std::exp(static_cast<double>(row[k])) - q));
    }
  }
}

template void log_softmax<float>(float*, std::int64_t, std::int64_t);
template void log_softmax<double>(double*, std::int64_t, std::int64_t);
template void cross_entropy_forward<float>(float*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t,
                                           double, double*, double*);
template void cross_entropy_forward<double>(double*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t,
                                            double, double*, double*);
template void cross_entropy_backward<float>(float*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t,
                                            double, double);
template void cross_entropy_backward<double>(double*, const std::int32_t*, std::int64_t, std::int64_t,
                                             std::int32_t, double, double);

}  // namespace dragoman::cpu
