// GEMM through oneDNN (f32, when the build has it) or OpenBLAS, with the widening of bf16/f16
// operands (see gemm.h).
#include "kernels/gemm.h"

#include <cblas.h>
#ifdef DRAGOMAN_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#include <algorithm>
#include <atomic>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "kernels/elementwise.h"

namespace dragoman::cpu {
namespace {

std::atomic<bool> g_row_invariant{false};

void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, float alpha, const float* a,
               blasint lda, const float* b, blasint ldb, float beta, float* c, blasint ldc);

// The same in blocks of kInvariantRows rows of A (row_invariant_products).
void invariant_gemm(CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, float alpha, const float* a, blasint lda,
                    const float* b, blasint ldb, float beta, float* c, blasint ldc) {
  in_invariant_blocks(a, m, lda, k, c, ldc, n, beta != 0.0f, [&](const float* a_block, float* c_block) {
    blas_gemm(CblasNoTrans, tb, static_cast<blasint>(kInvariantRows), n, k, alpha, a_block, lda, b, ldb, beta, c_block,
              ldc);
  });
}

void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, float alpha, const float* a,
               blasint lda, const float* b, blasint ldb, float beta, float* c, blasint ldc) {
  if (ta == CblasNoTrans && m != kInvariantRows && g_row_invariant.load(std::memory_order_relaxed)) {
    return invariant_gemm(tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
#ifdef DRAGOMAN_WITH_ONEDNN
  // oneDNN's row-major sgemm, on the calling thread's OpenMP threads.
  const dnnl_status_t status = dnnl_sgemm(ta == CblasTrans ? 'T' : 'N', tb == CblasTrans ? 'T' : 'N', m, n, k, alpha, a,
                                          lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success) {
    throw Error("cpu::gemm: oneDNN's dnnl_sgemm failed (status " + std::to_string(static_cast<int>(status)) + ") for " +
                std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k));
  }
#else
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, double alpha, const double* a,
               blasint lda, const double* b, blasint ldb, double beta, double* c, blasint ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Whether T is stored in 16 bits and widened to float for the products.
template <typename T>
constexpr bool kWidened = std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

// dst[r * cols + j] = load(src[r * ld + j]) for r < rows, j < cols (exact). One thread: a block is
// at most 512 x 512, converting it takes a fraction of its product's time, and an OpenMP team
// started between two OpenBLAS calls only competes with OpenBLAS's spinning threads.
template <typename T>
void widen(const T* src, std::int64_t ld, std::int64_t rows, std::int64_t cols, float* dst) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < cols; ++j) dst[r * cols + j] = load(src[r * ld + j]);
  }
}

// C = alpha op(A) op(B) + beta C (+ bias on every row) for bf16/f16 A and B, block by block (gemm.h).
template <typename T, typename C>
void widened_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a,
                  std::int64_t lda, const T* b, std::int64_t ldb, float beta, C* c, std::int64_t ldc, const T* bias) {
  constexpr bool kFloatC = std::is_same_v<C, float>;
  constexpr std::int64_t kB = kGemmBlock;
  // The float blocks, kept per thread between calls (a fresh 1 MiB allocation per product costs a
  // brk/mmap round trip and page faults every time).
  thread_local std::vector<float> a_block, b_block, tile;
  const auto reserve = [](std::vector<float>& v, std::int64_t elements) {
    if (v.size() < static_cast<std::size_t>(elements)) v.resize(static_cast<std::size_t>(elements));
  };
  reserve(a_block, std::min(kB, m) * std::min(kB, k));
  reserve(b_block, std::min(kB, k) * std::min(kB, n));
  if (!kFloatC) reserve(tile, std::min(kB, m) * std::min(kB, n));
  for (std::int64_t i0 = 0; i0 < m; i0 += kB) {
    const std::int64_t mb = std::min(kB, m - i0);
    for (std::int64_t j0 = 0; j0 < n; j0 += kB) {
      const std::int64_t nb = std::min(kB, n - j0);
      // The float tile of C[i0 : i0 + mb, j0 : j0 + nb]: C itself when C is float.
      float* t = nullptr;
      std::int64_t ldt = nb;
      if constexpr (kFloatC) {
        t = c + i0 * ldc + j0;
        ldt = ldc;
      } else {
        t = tile.data();
        if (beta == 0.0f) {
          std::fill_n(t, mb * nb, 0.0f);  // C is not read (it may hold anything, NaN included)
        } else {
          widen(c + i0 * ldc + j0, ldc, mb, nb, t);
        }
      }
      for (std::int64_t p0 = 0; p0 < k; p0 += kB) {
        const std::int64_t kb = std::min(kB, k - p0);
        // op(A)[i0.., p0..] as stored: [mb, kb], or [kb, mb] when transposed; op(B) likewise.
        if (trans_a) {
          widen(a + p0 * lda + i0, lda, kb, mb, a_block.data());
        } else {
          widen(a + i0 * lda + p0, lda, mb, kb, a_block.data());
        }
        if (trans_b) {
          widen(b + j0 * ldb + p0, ldb, nb, kb, b_block.data());
        } else {
          widen(b + p0 * ldb + j0, ldb, kb, nb, b_block.data());
        }
        blas_gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(mb),
                  static_cast<blasint>(nb), static_cast<blasint>(kb), alpha, a_block.data(),
                  static_cast<blasint>(trans_a ? mb : kb), b_block.data(), static_cast<blasint>(trans_b ? kb : nb),
                  p0 == 0 ? beta : 1.0f, t, static_cast<blasint>(ldt));
      }
      if constexpr (!kFloatC) {
        for (std::int64_t r = 0; r < mb; ++r) {
          for (std::int64_t j = 0; j < nb; ++j) {
            const float bias_j = bias != nullptr ? load(bias[j0 + j]) : 0.0f;
            c[(i0 + r) * ldc + j0 + j] = store<T>(t[r * nb + j] + bias_j);
          }
        }
      }
    }
  }
}

}  // namespace

void set_row_invariant_products(bool on) { g_row_invariant.store(on); }
bool row_invariant_products() { return g_row_invariant.load(); }

template <typename T, typename C>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, acc_t<T> alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, acc_t<T> beta, C* c, std::int64_t ldc) {
  static_assert(std::is_same_v<C, T> || std::is_same_v<C, acc_t<T>>, "C is T or acc_t<T>");
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS would leave C alone when k == 0 only if beta == 1; define it: C = beta * C
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        C& x = c[i * ldc + j];
        x = beta == acc_t<T>(0) ? C() : store<C>(beta * load(x));
      }
    }
    return;
  }
  if constexpr (kWidened<T>) {
    widened_gemm<T, C>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
  } else {
    blas_gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
  }
}

template <typename T>
void gemm_bias(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda,
               const T* b, std::int64_t ldb, const T* bias, T* c) {
  if constexpr (kWidened<T>) {
    if (m == 0 || n == 0) return;
    // k == 0 too: the tile starts at 0 and gets the bias.
    widened_gemm<T, T>(trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n, bias);
  } else {
    gemm<T, T>(trans_a, trans_b, m, n, k, T(1), a, lda, b, ldb, T(0), c, n);
    if (bias != nullptr) bias_add<T>(c, bias, m, n);
  }
}

template <typename T>
void gemm_strided_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, acc_t<T> alpha,
                          const T* a, std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                          std::int64_t stride_b, acc_t<T> beta, T* c, std::int64_t ldc, std::int64_t stride_c,
                          std::int64_t batch) {
  for (std::int64_t i = 0; i < batch; ++i) {
    gemm<T, T>(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta, c + i * stride_c,
               ldc);
  }
}

#define DRAGOMAN_INSTANTIATE_GEMM(T, C)                                                                            \
  template void gemm<T, C>(bool, bool, std::int64_t, std::int64_t, std::int64_t, acc_t<T>, const T*, std::int64_t, \
                           const T*, std::int64_t, acc_t<T>, C*, std::int64_t);
#define DRAGOMAN_INSTANTIATE(T)                                                                                      \
  DRAGOMAN_INSTANTIATE_GEMM(T, T)                                                                                    \
  template void gemm_bias<T>(bool, bool, std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t, const T*, \
                             std::int64_t, const T*, T*);                                                            \
  template void gemm_strided_batched<T>(bool, bool, std::int64_t, std::int64_t, std::int64_t, acc_t<T>, const T*,    \
                                        std::int64_t, std::int64_t, const T*, std::int64_t, std::int64_t, acc_t<T>,  \
                                        T*, std::int64_t, std::int64_t, std::int64_t);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
DRAGOMAN_INSTANTIATE_GEMM(bf16, float)
DRAGOMAN_INSTANTIATE_GEMM(f16, float)
#undef DRAGOMAN_INSTANTIATE
#undef DRAGOMAN_INSTANTIATE_GEMM

}  // namespace dragoman::cpu
