// log-softmax and label-smoothed cross-entropy (see cross_entropy.h).
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dragoman::cpu {

namespace {

// log(sum_k exp(x[k])) of one row, in double.
template <typename T>
double log_sum_exp(const T* row, std::int64_t v) {
  const double max_value = *std::max_element(row, row + v);
  double sum = 0;
  for (std::int64_t k = 0; k < v; ++k) sum += std::exp(row[k] - max_value);
  return max_value + std::log(sum);
}

// A row's loss and nll from its log-probabilities (already rounded to T).
struct RowLoss {
  double loss = 0, nll = 0;
};

// Adds the rows' losses in row order (the same sums for any thread count).
void add_in_order(const std::vector<RowLoss>& rows, double* loss_sum, double* nll_sum) {
  for (const RowLoss& r : rows) {
    *loss_sum += r.loss;
    *nll_sum += r.nll;
  }
}

}  // namespace

template <typename T>
void log_softmax(T* x, std::int64_t rows, std::int64_t v) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = x + r * v;
    const double log_z = log_sum_exp(row, v);
    for (std::int64_t k = 0; k < v; ++k) row[k] = static_cast<T>(row[k] - log_z);
  }
}

template <typename T>
void cross_entropy_forward(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad,
                           double smoothing, double* loss_sum, double* nll_sum) {
  std::vector<RowLoss> row_loss(static_cast<std::size_t>(rows));
  const double off = v > 1 ? smoothing / static_cast<double>(v - 1) : 0.0;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    T* lp = logits + r * v;
    const double log_z = log_sum_exp(lp, v);
    double sum_lp = 0;  // over k != pad
    for (std::int64_t k = 0; k < v; ++k) {
      lp[k] = static_cast<T>(lp[k] - log_z);
      if (k != pad) sum_lp += lp[k];
    }
    const std::int32_t y = targets[r];
    if (y == pad) continue;
    row_loss[static_cast<std::size_t>(r)] = {-(1.0 - smoothing) * lp[y] - off * sum_lp, -static_cast<double>(lp[y])};
  }
  add_in_order(row_loss, loss_sum, nll_sum);
}

template <typename T>
void cross_entropy_fused(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad,
                         double smoothing, double* loss_sum, double* nll_sum) {
  std::vector<RowLoss> row_loss(static_cast<std::size_t>(rows));
  const double off = v > 1 ? smoothing / static_cast<double>(v - 1) : 0.0;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = logits + r * v;
    const std::int32_t y = targets[r];
    if (y == pad) {
      std::fill(row, row + v, T(0));
      continue;
    }
    const double log_z = log_sum_exp(row, v);
    double sum_lp = 0, lp_y = 0;
    for (std::int64_t k = 0; k < v; ++k) {
      const T lp = static_cast<T>(row[k] - log_z);
      if (k != pad) sum_lp += lp;
      if (k == y) lp_y = lp;
      const double q = (k == y ? 1.0 - smoothing : 0.0) + (k != pad ? off : 0.0);
      row[k] = static_cast<T>(std::exp(static_cast<double>(lp)) - q);
    }
    row_loss[static_cast<std::size_t>(r)] = {-(1.0 - smoothing) * lp_y - off * sum_lp, -lp_y};
  }
  add_in_order(row_loss, loss_sum, nll_sum);
}

template void log_softmax<float>(float*, std::int64_t, std::int64_t);
template void log_softmax<double>(double*, std::int64_t, std::int64_t);
template void cross_entropy_forward<float>(float*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t,
                                           double, double*, double*);
template void cross_entropy_forward<double>(double*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t,
                                            double, double*, double*);
template void cross_entropy_fused<float>(float*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t, double,
                                         double*, double*);
template void cross_entropy_fused<double>(double*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t,
                                          double, double*, double*);

}  // namespace dragoman::cpu
