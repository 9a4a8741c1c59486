// Muon (Keller Jordan, 2024; torch.optim.Muon) for one weight matrix, the CPU spec. The update of a
// hidden layer's [rows, cols] weight W from its gradient G, with step t >= 1:
//   M = mu M + (1 - mu) G                               (momentum, torch's buf.lerp_(G, 1 - mu))
//   U = (1 - mu) G + mu M  (nesterov)   or   U = M
//   O = newton_schulz(U)                                (about U's orthogonal factor: U = P S Q^T -> P Q^T)
//   W = W (1 - lr weight_decay) - lr * 0.2 sqrt(max(rows, cols)) * O
// The factor 0.2 sqrt(max(rows, cols)) gives the update the root-mean-square of a typical Adam
// update (Liu et al. 2025, "Muon is scalable for LLM training"; torch's adjust_lr_fn
// "match_rms_adamw"), so that Muon's learning rate reads on Adam's scale.
//
// newton_schulz: X = U / (|U|_F + eps), then `steps` times X = a X + (b A + c A A) X with
// A = X X^T (for rows <= cols; X^T X on the right for a tall X), (a, b, c) = (3.4445, -4.7750,
// 2.0315): the quintic iteration that drives every singular value into about [0.7, 1.2] in 5 steps.
// The products are cpu::gemm's (oneDNN or OpenBLAS): called alone, newton_schulz and muon_step run
// them on the caller's OpenMP threads, so their last bits depend on the library and the thread
// count; muon_steps runs each matrix's on one thread, so its bits depend on the library alone.
// Never on the run. T = float or double.
#pragma once

#include <cstdint>
#include <vector>

namespace dragoman::cpu {

struct MuonHyper {
  double lr = 0, momentum = 0.95, eps = 1e-7, weight_decay = 0;
  bool nesterov = true;
  std::int64_t ns_steps = 5;
};

// The quintic's coefficients (Keller Jordan's, torch.optim.Muon's defaults).
inline constexpr double kNewtonSchulzA = 3.4445, kNewtonSchulzB = -4.7750, kNewtonSchulzC = 2.0315;

// Replaces x [rows, cols] (row-major, contiguous) by its orthogonalised form, in place.
template <typename T>
void newton_schulz(T* x, std::int64_t rows, std::int64_t cols, std::int64_t steps, double eps);

// One Muon update of param [rows, cols] from grad, with its momentum buffer (same layout, updated).
template <typename T>
void muon_step(T* param, const T* grad, T* momentum, std::int64_t rows, std::int64_t cols, const MuonHyper& hyper);

// One matrix of muon_steps: param, grad and momentum [rows, cols], contiguous.
template <typename T>
struct MuonMatrix {
  T* param;
  const T* grad;
  T* momentum;
  std::int64_t rows, cols;
};

// muon_step on each matrix, the matrices spread over the OpenMP threads (largest first), each
// one's products on one thread: the same bits at every thread count. Small matrices (d_model 128:
// products of 128 x 128) keep two threads busier this way than splitting each product.
template <typename T>
void muon_steps(const std::vector<MuonMatrix<T>>& matrices, const MuonHyper& hyper);

// lr * 0.2 sqrt(max(rows, cols)): the step taken along the orthogonalised update.
double muon_update_scale(double lr, std::int64_t rows, std::int64_t cols);

}  // namespace dragoman::cpu
