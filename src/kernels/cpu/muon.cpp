// Muon (see muon.h).
#include "kernels/cpu/muon.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/gemm.h"

namespace dragoman::cpu {

template <typename T>
void newton_schulz(T* x, std::int64_t rows, std::int64_t cols, std::int64_t steps, double eps) {
  const std::int64_t n = rows * cols;
  if (n == 0) return;
  double sum_squares = 0;
  for (std::int64_t i = 0; i < n; ++i) sum_squares += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  const T inverse = static_cast<T>(1.0 / (std::sqrt(sum_squares) + eps));
  for (std::int64_t i = 0; i < n; ++i) x[i] *= inverse;
  // The Gram matrix is taken on the short side: [s, s] with s = min(rows, cols).
  const bool wide = rows <= cols;
  const std::int64_t s = wide ? rows : cols;
  std::vector<T> a(static_cast<std::size_t>(s * s)), b(a.size()), y(static_cast<std::size_t>(n));
  const T ca = static_cast<T>(kNewtonSchulzA), cb = static_cast<T>(kNewtonSchulzB), cc = static_cast<T>(kNewtonSchulzC);
  for (std::int64_t step = 0; step < steps; ++step) {
    if (wide) {  // A = X X^T   [rows, rows]
      gemm<T, T>(false, true, rows, rows, cols, T(1), x, cols, x, cols, T(0), a.data(), rows);
    } else {  // A = X^T X   [cols, cols]
      gemm<T, T>(true, false, cols, cols, rows, T(1), x, cols, x, cols, T(0), a.data(), cols);
    }
    b = a;  // B = c A A + b A
    gemm<T, T>(false, false, s, s, s, cc, a.data(), s, a.data(), s, cb, b.data(), s);
    std::copy(x, x + n, y.begin());
    if (wide) {  // X = B X + a X
      gemm<T, T>(false, false, rows, cols, rows, T(1), b.data(), rows, y.data(), cols, ca, x, cols);
    } else {  // X = X B + a X
      gemm<T, T>(false, false, rows, cols, cols, T(1), y.data(), cols, b.data(), cols, ca, x, cols);
    }
  }
}

double muon_update_scale(double lr, std::int64_t rows, std::int64_t cols) {
  return lr * 0.2 * std::sqrt(static_cast<double>(std::max(rows, cols)));
}

template <typename T>
void muon_step(T* param, const T* grad, T* momentum, std::int64_t rows, std::int64_t cols, const MuonHyper& h) {
  const std::int64_t n = rows * cols;
  const T mu = static_cast<T>(h.momentum), rest = static_cast<T>(1.0 - h.momentum);
  std::vector<T> update(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    momentum[i] = mu * momentum[i] + rest * grad[i];
    update[i] = h.nesterov ? rest * grad[i] + mu * momentum[i] : momentum[i];
  }
  newton_schulz(update.data(), rows, cols, h.ns_steps, h.eps);
  const T decay = static_cast<T>(1.0 - h.lr * h.weight_decay);
  const T step = static_cast<T>(muon_update_scale(h.lr, rows, cols));
  for (std::int64_t i = 0; i < n; ++i) param[i] = param[i] * decay - step * update[i];
}

template <typename T>
void muon_steps(const std::vector<MuonMatrix<T>>& matrices, const MuonHyper& hyper) {
  std::vector<std::size_t> order(matrices.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return matrices[a].rows * matrices[a].cols > matrices[b].rows * matrices[b].cols;
  });
  const auto count = static_cast<std::ptrdiff_t>(order.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (std::ptrdiff_t k = 0; k < count; ++k) {
    const MuonMatrix<T>& x = matrices[order[static_cast<std::size_t>(k)]];
    muon_step(x.param, x.grad, x.momentum, x.rows, x.cols, hyper);
  }
}

template void newton_schulz<float>(float*, std::int64_t, std::int64_t, std::int64_t, double);
template void newton_schulz<double>(double*, std::int64_t, std::int64_t, std::int64_t, double);
template void muon_step<float>(float*, const float*, float*, std::int64_t, std::int64_t, const MuonHyper&);
template void muon_step<double>(double*, const double*, double*, std::int64_t, std::int64_t, const MuonHyper&);
template void muon_steps<float>(const std::vector<MuonMatrix<float>>&, const MuonHyper&);
template void muon_steps<double>(const std::vector<MuonMatrix<double>>&, const MuonHyper&);

}  // namespace dragoman::cpu
