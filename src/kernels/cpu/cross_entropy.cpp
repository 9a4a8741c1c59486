// log-softmax and label-smoothed cross-entropy (see cross_entropy.h).
#include "kernels/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "base/numeric.h"
#include "kernels/cpu/vector_math.h"

namespace dragoman::cpu {

namespace {

// log(sum_k exp(x[k])) of one row, in acc_t<T> (the maximum subtracted first). f32 rows use the
// vectorised exp and sums of kernels/cpu/vector_math.h.
template <typename T>
acc_t<T> log_sum_exp(const T* row, std::int64_t v) {
  using Acc = acc_t<T>;
  if constexpr (std::is_same_v<T, float>) {
    const float max_value = std::max(row[0], max_f32(row, v));  // row[0]: a NaN first entry stays NaN
    return max_value + std::log(sum_exp_f32(row, v, max_value));
  }
  Acc max_value = load(row[0]);
  for (std::int64_t k = 1; k < v; ++k) max_value = std::max(max_value, load(row[k]));
  Acc sum = 0;
  for (std::int64_t k = 0; k < v; ++k) sum += std::exp(load(row[k]) - max_value);
  return max_value + std::log(sum);
}

// Whether `pad` is one of the v classes (its q is then 0, and the loss's sum leaves it out).
bool pad_is_class(std::int64_t v, std::int32_t pad) { return pad >= 0 && pad < v; }

// The sum of an f32 row's logits over k != pad, in the lanes of sum_wide_f32: the entries before the
// pad, then those after it.
double logit_sum(const float* row, std::int64_t v, std::int32_t pad) {
  if (!pad_is_class(v, pad)) return sum_wide_f32(row, v);
  return sum_wide_f32(row, pad) + sum_wide_f32(row + pad + 1, v - pad - 1);
}

// The sum of the log-probabilities over k != pad, from that sum of logits: less log_z for each class.
double log_prob_sum(double logits, std::int64_t v, std::int32_t pad, float log_z) {
  return logits - static_cast<double>(log_z) * static_cast<double>(pad_is_class(v, pad) ? v - 1 : v);
}

// A row's loss and nll, summed in double from its log-probabilities in acc_t<T>.
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
    const acc_t<T> log_z = log_sum_exp(row, v);
    if constexpr (std::is_same_v<T, float>) {
      subtract_f32(row, v, log_z);
      continue;
    }
    for (std::int64_t k = 0; k < v; ++k) row[k] = store<T>(load(row[k]) - log_z);
  }
}

template <typename T>
void cross_entropy_forward(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad,
                           double smoothing, double* loss_sum, double* nll_sum) {
  using Acc = acc_t<T>;
  std::vector<RowLoss> row_loss(static_cast<std::size_t>(rows));
  const double off = v > 1 ? smoothing / static_cast<double>(v - 1) : 0.0;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = logits + r * v;
    const std::int32_t y = targets[r];
    const Acc log_z = log_sum_exp(row, v);
    double sum_lp = 0, lp_y = 0;  // sum_lp over k != pad
    if constexpr (std::is_same_v<T, float>) {
      // cross_entropy_fused's sums: the logits' sum in lanes (vector_math.h) less log_z for each.
      sum_lp = log_prob_sum(logit_sum(row, v, pad), v, pad, log_z);
      subtract_f32(row, v, log_z);  // the log-probabilities
      lp_y = y >= 0 && y < v ? row[y] : 0.0f;
    } else {
      for (std::int64_t k = 0; k < v; ++k) {
        const Acc lp = load(row[k]) - log_z;
        row[k] = store<T>(lp);
        if (k != pad) sum_lp += lp;
        if (k == y) lp_y = lp;
      }
    }
    if (y == pad) continue;
    row_loss[static_cast<std::size_t>(r)] = {-(1.0 - smoothing) * lp_y - off * sum_lp, -lp_y};
  }
  add_in_order(row_loss, loss_sum, nll_sum);
}

template <typename T>
void cross_entropy_fused(T* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v, std::int32_t pad,
                         double smoothing, double* loss_sum, double* nll_sum, double scale) {
  using Acc = acc_t<T>;
  const auto s = static_cast<Acc>(scale);
  std::vector<RowLoss> row_loss(static_cast<std::size_t>(rows));
  const double off = v > 1 ? smoothing / static_cast<double>(v - 1) : 0.0;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = logits + r * v;
    const std::int32_t y = targets[r];
    if (y == pad) {
      std::fill(row, row + v, store<T>(0));
      continue;
    }
    double sum_lp = 0, lp_y = 0;
    if constexpr (std::is_same_v<T, float>) {
      // One exp a logit (kernels/cpu/vector_math.h): e = exp(x - max) stored with its sum, so that
      // log_z = max + log(sum) is log_sum_exp's; the probability is e / sum, less q.
      const float max_value = std::max(row[0], max_f32(row, v));
      const double sum_x = logit_sum(row, v, pad);
      const float x_y = row[y];
      const float sum = exp_store_f32(row, v, max_value, row);
      const float log_z = max_value + std::log(sum);
      sum_lp = log_prob_sum(sum_x, v, pad, log_z);
      lp_y = x_y - log_z;
      const float p_y = row[y] / sum;
      const auto q_off = static_cast<float>(off);
      const float pad_p = pad_is_class(v, pad) ? row[pad] / sum : 0.0f;  // the pad's q is 0
      for (std::int64_t k = 0; k < v; ++k) row[k] = (row[k] / sum - q_off) * s;
      if (pad_is_class(v, pad)) row[pad] = pad_p * s;
      row[y] = (p_y - static_cast<float>((1.0 - smoothing) + off)) * s;
    } else {
      const Acc log_z = log_sum_exp(row, v);
      for (std::int64_t k = 0; k < v; ++k) {
        const Acc lp = load(row[k]) - log_z;
        if (k != pad) sum_lp += lp;
        if (k == y) lp_y = lp;
        const Acc q = static_cast<Acc>((k == y ? 1.0 - smoothing : 0.0) + (k != pad ? off : 0.0));
        row[k] = store<T>((std::exp(lp) - q) * s);
      }
    }
    row_loss[static_cast<std::size_t>(r)] = {-(1.0 - smoothing) * lp_y - off * sum_lp, -lp_y};
  }
  add_in_order(row_loss, loss_sum, nll_sum);
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                     \
  template void log_softmax<T>(T*, std::int64_t, std::int64_t);                                                     \
  template void cross_entropy_forward<T>(T*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t, double, \
                                         double*, double*);                                                         \
  template void cross_entropy_fused<T>(T*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t, double,   \
                                       double*, double*, double);
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cpu
