// The raw-pointer CPU kernels (dragoman::cpu), which are the specification of their CUDA twins,
// against naive reference loops written here from the formulas in the headers and docs/MODEL.md:
// gemm (every transpose combination, leading dimensions wider than the matrices, k == 0),
// attention (key padding, causal mask, one query against a strided cache, fully masked rows,
// dropout), layer norm, log-softmax and the label-smoothed cross-entropy, embeddings and
// sinusoids, dropout statistics, Adam against a hand-computed two-step update, and sum_squares.
// Kernels that promise thread-count independence are run with 1 and 2 OpenMP threads and must
// give the same bits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "core/philox.h"
#include "core/threads.h"
#include "kernels/cpu/adam.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/layer_norm.h"

namespace dragoman {
namespace {

using std::int64_t;

// n values uniform in [offset - scale, offset + scale) from Philox stream `rng_stream`.
template <typename T>
std::vector<T> random_values(int64_t n, std::uint64_t rng_stream, double scale = 1.0, double offset = 0.0) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<T>(offset + scale * (2.0 * philox::uniform(99, rng_stream, i) - 1.0));
  }
  return v;
}

// The tolerance of a float or double result against a double reference of magnitude ~1.
template <typename T>
double tolerance() {
  return std::is_same<T, float>::value ? 1e-5 : 1e-12;
}

// Sets the compute thread count for one scope and restores the default afterwards.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n) { set_compute_threads(n); }
  ~ScopedThreads() { set_compute_threads(0); }
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;
};

std::size_t at(int64_t i) { return static_cast<std::size_t>(i); }

// max |a[i] - b[i]|, for comparing long vectors in one assertion.
template <typename A, typename B>
double max_abs_difference(const std::vector<A>& a, const std::vector<B>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
  return worst;
}

}  // namespace

// ---- gemm ---------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("cpu::gemm matches a naive product for every transpose combination", "[kernels]", float, double) {
  using T = TestType;
  const int64_t m = 5, n = 4, k = 3;
  const T alpha = T(1.5), beta = T(0.5);
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      INFO("trans_a " << ta << ", trans_b " << tb);
      // Stored operands with row strides wider than their rows; the extra columns are never read.
      const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, lda = a_cols + 3;
      const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n, ldb = b_cols + 2;
      const int64_t ldc = n + 5;
      std::vector<T> a = random_values<T>(a_rows * lda, 1), b = random_values<T>(b_rows * ldb, 2);
      for (int64_t i = 0; i < a_rows; ++i) {
        for (int64_t j = a_cols; j < lda; ++j) a[at(i * lda + j)] = std::numeric_limits<T>::quiet_NaN();
      }
      for (int64_t i = 0; i < b_rows; ++i) {
        for (int64_t j = b_cols; j < ldb; ++j) b[at(i * ldb + j)] = std::numeric_limits<T>::quiet_NaN();
      }
      const std::vector<T> c0 = random_values<T>(m * ldc, 3);
      std::vector<T> c = c0;
      cpu::gemm<T>(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t p = 0; p < k; ++p) {
            const double aip = ta ? a[at(p * lda + i)] : a[at(i * lda + p)];
            const double bpj = tb ? b[at(j * ldb + p)] : b[at(p * ldb + j)];
            dot += aip * bpj;
          }
          const double expected = static_cast<double>(alpha) * dot + static_cast<double>(beta) * c0[at(i * ldc + j)];
          CHECK(c[at(i * ldc + j)] == Approx(expected).margin(tolerance<T>()));
        }
        for (int64_t j = n; j < ldc; ++j) CHECK(c[at(i * ldc + j)] == c0[at(i * ldc + j)]);  // padding untouched
      }
    }
  }
}

TEMPLATE_TEST_CASE("cpu::gemm with k == 0 scales C by beta", "[kernels]", float, double) {
  using T = TestType;
  const int64_t m = 3, n = 2, ldc = 4;
  const std::vector<T> c0 = random_values<T>(m * ldc, 4);
  const T dummy[1] = {T(1)};
  for (const T beta : {T(0), T(0.5), T(1)}) {
    INFO("beta " << beta);
    std::vector<T> c = c0;
    cpu::gemm<T>(false, true, m, n, 0, T(2), dummy, 1, dummy, 1, beta, c.data(), ldc);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const T expected = j < n ? beta * c0[at(i * ldc + j)] : c0[at(i * ldc + j)];
        CHECK(c[at(i * ldc + j)] == expected);
      }
    }
  }
}

TEST_CASE("cpu::gemm_strided_batched computes each product of the batch", "[kernels]") {
  const int64_t m = 2, n = 3, k = 4, batch = 3;
  const int64_t stride_a = m * k + 1, stride_b = k * n + 2, stride_c = m * n + 3;
  const std::vector<double> a = random_values<double>(batch * stride_a, 5),
                            b = random_values<double>(batch * stride_b, 6);
  std::vector<double> c(at(batch * stride_c), -7.0);
  cpu::gemm_strided_batched<double>(false, false, m, n, k, 1.0, a.data(), k, stride_a, b.data(), n, stride_b, 0.0,
                                    c.data(), n, stride_c, batch);
  for (int64_t x = 0; x < batch; ++x) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t p = 0; p < k; ++p) dot += a[at(x * stride_a + i * k + p)] * b[at(x * stride_b + p * n + j)];
        CHECK(c[at(x * stride_c + i * n + j)] == Approx(dot).margin(1e-12));
      }
    }
    for (int64_t e = m * n; e < stride_c; ++e) CHECK(c[at(x * stride_c + e)] == -7.0);
  }
}

// ---- attention ----------------------------------------------------------------------------------

namespace {

struct NaiveAttention {
  std::vector<double> probs;  // [B, H, T, S]
  std::vector<double> out;    // [B, T, H*Kv] (contiguous)
  std::vector<double> lse;    // [B, H, T]: log of the sum of exp(score) over the visible keys (0: none)
};

// Per-head softmax attention straight from the formula, with masks applied as -infinity.
template <typename T>
NaiveAttention naive_attention(const cpu::AttentionShape& a, const std::vector<T>& q, const std::vector<T>& k,
                               const std::vector<T>& v, const std::vector<std::int32_t>& lengths, double scale,
                               double dropout_p = 0, std::uint64_t seed = 0, std::uint64_t rng_stream = 0) {
  const int64_t B = a.batch, H = a.heads, Tq = a.queries, S = a.keys, K = a.key_size, Kv = a.value_size;
  NaiveAttention r{std::vector<double>(at(B * H * Tq * S), 0.0), std::vector<double>(at(B * Tq * H * Kv), 0.0),
                   std::vector<double>(at(B * H * Tq), 0.0)};
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t t = 0; t < Tq; ++t) {
        std::vector<double> score(at(S), -std::numeric_limits<double>::infinity());
        double max_score = -std::numeric_limits<double>::infinity();
        for (int64_t s = 0; s < S; ++s) {
          const bool masked = s >= lengths[at(b)] || (a.causal && s > a.query_offset + t);
          if (masked) continue;
          double dot = 0;
          for (int64_t i = 0; i < K; ++i) {
            dot += static_cast<double>(q[at(b * a.q_batch_stride + t * a.q_row_stride + h * K + i)]) *
                   static_cast<double>(k[at(b * a.k_batch_stride + s * a.k_row_stride + h * K + i)]);
          }
          score[at(s)] = scale * dot;
          max_score = std::max(max_score, score[at(s)]);
        }
        double z = 0;
        for (int64_t s = 0; s < S; ++s) z += std::isinf(score[at(s)]) ? 0.0 : std::exp(score[at(s)] - max_score);
        r.lse[at((b * H + h) * Tq + t)] = z > 0 ? max_score + std::log(z) : 0.0;
        for (int64_t s = 0; s < S; ++s) {
          const std::size_t row = at(((b * H + h) * Tq + t) * S + s);
          const double p = std::isinf(score[at(s)]) ? 0.0 : std::exp(score[at(s)] - max_score) / z;
          r.probs[row] = p;
          double pd = p;
          if (dropout_p > 0) {
            const bool keep = philox::uniform(seed, rng_stream, row) >= static_cast<float>(dropout_p);
            pd = keep ? p / (1.0 - dropout_p) : 0.0;
          }
          for (int64_t i = 0; i < Kv; ++i) {
            r.out[at((b * Tq + t) * H * Kv + h * Kv + i)] +=
                pd * static_cast<double>(v[at(b * a.v_batch_stride + s * a.v_row_stride + h * Kv + i)]);
          }
        }
      }
    }
  }
  return r;
}

// A shape with contiguous [B, rows, H*size] operands.
cpu::AttentionShape contiguous_shape(int64_t B, int64_t H, int64_t Tq, int64_t S, int64_t K, int64_t Kv) {
  cpu::AttentionShape a;
  a.batch = B, a.heads = H, a.queries = Tq, a.keys = S, a.key_size = K, a.value_size = Kv;
  a.q_batch_stride = Tq * H * K, a.q_row_stride = H * K;
  a.k_batch_stride = S * H * K, a.k_row_stride = H * K;
  a.v_batch_stride = S * H * Kv, a.v_row_stride = H * Kv;
  a.out_batch_stride = Tq * H * Kv, a.out_row_stride = H * Kv;
  return a;
}

}  // namespace

// The probabilities of query row `row` ([B, H, T] index) as the backward pass recomputes them:
// exp(score - lse), from the kernel's own lse.
template <typename T>
std::vector<double> probabilities_from_lse(const NaiveAttention& ref, const std::vector<T>& lse, int64_t S) {
  std::vector<double> probs(ref.probs.size());
  for (std::size_t i = 0; i < probs.size(); ++i) {
    const std::size_t row = i / at(S);
    // ref.probs = exp(score - ref.lse): rescale by the difference of the two log-sum-exps.
    probs[i] = ref.probs[i] * std::exp(ref.lse[row] - static_cast<double>(lse[row]));
  }
  return probs;
}

TEMPLATE_TEST_CASE("cpu::attention_forward matches a naive per-head softmax", "[kernels]", float, double) {
  using T = TestType;
  const int64_t B = 3, H = 2, K = 3, Kv = 2;
  struct Case {
    const char* name;
    int64_t queries, keys;
    bool causal;
    std::vector<std::int32_t> lengths;
    double dropout;
  };
  const std::vector<Case> cases = {
      {"key padding, one row fully masked", 4, 5, false, {5, 3, 0}, 0.0},
      {"causal with key padding", 4, 4, true, {4, 2, 3}, 0.0},
      {"attention dropout", 3, 5, false, {5, 4, 2}, 0.25},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      cpu::AttentionShape a = contiguous_shape(B, H, c.queries, c.keys, K, Kv);
      a.causal = c.causal;
      const int64_t Tq = c.queries, S = c.keys;
      const std::vector<T> q = random_values<T>(B * Tq * H * K, 10, 1.5), k = random_values<T>(B * S * H * K, 11, 1.5),
                           v = random_values<T>(B * S * H * Kv, 12);
      const double scale = 1.0 / std::sqrt(static_cast<double>(K));
      // Sentinels: every output element must be written.
      std::vector<T> lse(at(B * H * Tq), T(7)), out(at(B * Tq * H * Kv), T(7));
      cpu::attention_forward<T>(a, q.data(), k.data(), v.data(), c.lengths.data(), scale, c.dropout, 5, 6, lse.data(),
                                out.data());
      const NaiveAttention ref = naive_attention(a, q, k, v, c.lengths, scale, c.dropout, 5, 6);
      for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == Approx(ref.out[i]).margin(tolerance<T>()));
      for (std::size_t i = 0; i < lse.size(); ++i) CHECK(lse[i] == Approx(ref.lse[i]).margin(tolerance<T>()));
      if (c.dropout > 0) {  // the mask drops some probabilities: the output differs from no dropout
        const NaiveAttention undropped = naive_attention(a, q, k, v, c.lengths, scale);
        double difference = 0;
        for (std::size_t i = 0; i < out.size(); ++i) difference += std::fabs(undropped.out[i] - ref.out[i]);
        CHECK(difference > 0.1);
      }
      // The probabilities the backward pass recomputes from lse sum to 1 in every row with a key.
      const std::vector<double> probs = probabilities_from_lse(ref, lse, S);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t ht = 0; ht < H * Tq; ++ht) {
          double sum = 0;
          for (int64_t s = 0; s < S; ++s) sum += probs[at((b * H * Tq + ht) * S + s)];
          CHECK(sum == Approx(c.lengths[at(b)] > 0 ? 1.0 : 0.0).margin(tolerance<T>()));
        }
      }
      // Decoding passes no lse: the same output.
      std::vector<T> out_no_lse(out.size(), T(7));
      cpu::attention_forward<T>(a, q.data(), k.data(), v.data(), c.lengths.data(), scale, c.dropout, 5, 6, nullptr,
                                out_no_lse.data());
      CHECK(out_no_lse == out);
    }
  }
}

TEST_CASE("cpu::attention_forward of a fully masked row gives zero output and log-sum-exp", "[kernels]") {
  cpu::AttentionShape a = contiguous_shape(1, 2, 2, 3, 2, 2);
  const std::vector<double> q = random_values<double>(8, 20), k = random_values<double>(12, 21),
                            v = random_values<double>(12, 22);
  const std::vector<std::int32_t> lengths = {0};
  std::vector<double> lse(4, 7.0), out(8, 7.0);
  cpu::attention_forward<double>(a, q.data(), k.data(), v.data(), lengths.data(), 1.0, 0.0, 0, 0, lse.data(),
                                 out.data());
  CHECK(lse == std::vector<double>(4, 0.0));
  CHECK(out == std::vector<double>(8, 0.0));
  // Its backward pass gives zero gradients (and reads no key).
  std::vector<double> dout = random_values<double>(8, 23), dq(8, 7.0), dk(12, 7.0), dv(12, 7.0);
  cpu::attention_backward<double>(a, q.data(), k.data(), v.data(), lengths.data(), 1.0, 0.0, 0, 0, lse.data(),
                                  dout.data(), dq.data(), dk.data(), dv.data());
  CHECK(dq == std::vector<double>(8, 0.0));
  CHECK(dk == std::vector<double>(12, 0.0));
  CHECK(dv == std::vector<double>(12, 0.0));
}

TEST_CASE("cpu::attention_forward of one query against a strided key/value cache", "[kernels]") {
  // Incremental decoding: the cache has capacity P, the first S rows are filled, and the query at
  // position S - 1 sees all of them (query_offset = S - 1, causal).
  const int64_t B = 2, H = 2, K = 3, Kv = 4, P = 7, S = 4;
  const std::vector<double> k_cache = random_values<double>(B * P * H * K, 30, 1.5),
                            v_cache = random_values<double>(B * P * H * Kv, 31);
  const std::vector<double> q_full = random_values<double>(B * S * H * K, 32, 1.5);  // all S queries
  const std::vector<std::int32_t> lengths = {S, S};
  const double scale = 1.0 / std::sqrt(static_cast<double>(K));

  // The last query alone, against the cache read in place.
  std::vector<double> q_last(at(B * H * K));
  for (int64_t b = 0; b < B; ++b) {
    std::copy_n(q_full.begin() + (b * S + S - 1) * H * K, H * K, q_last.begin() + b * H * K);
  }
  cpu::AttentionShape a = contiguous_shape(B, H, 1, S, K, Kv);
  a.k_batch_stride = P * H * K;
  a.v_batch_stride = P * H * Kv;
  a.causal = true;
  a.query_offset = S - 1;
  std::vector<double> lse(at(B * H)), out(at(B * H * Kv));
  cpu::attention_forward<double>(a, q_last.data(), k_cache.data(), v_cache.data(), lengths.data(), scale, 0.0, 0, 0,
                                 lse.data(), out.data());
  const NaiveAttention ref = naive_attention(a, q_last, k_cache, v_cache, lengths, scale);
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == Approx(ref.out[i]).margin(1e-12));
  for (std::size_t i = 0; i < lse.size(); ++i) CHECK(lse[i] == Approx(ref.lse[i]).margin(1e-12));
  for (const double p : ref.probs) CHECK(p > 0);  // every cached key is visible

  // The same as the last row of the full causal forward pass over contiguous copies of the keys.
  std::vector<double> k(at(B * S * H * K)), v(at(B * S * H * Kv));
  for (int64_t b = 0; b < B; ++b) {
    std::copy_n(k_cache.begin() + b * P * H * K, S * H * K, k.begin() + b * S * H * K);
    std::copy_n(v_cache.begin() + b * P * H * Kv, S * H * Kv, v.begin() + b * S * H * Kv);
  }
  cpu::AttentionShape full = contiguous_shape(B, H, S, S, K, Kv);
  full.causal = true;
  std::vector<double> full_out(at(B * S * H * Kv));
  cpu::attention_forward<double>(full, q_full.data(), k.data(), v.data(), lengths.data(), scale, 0.0, 0, 0, nullptr,
                                 full_out.data());
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < H * Kv; ++i) {
      CHECK(out[at(b * H * Kv + i)] == Approx(full_out[at((b * S + S - 1) * H * Kv + i)]).margin(1e-14));
    }
  }
}

// ---- layer norm ---------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("cpu::layer_norm_forward matches the formula", "[kernels]", float, double) {
  using T = TestType;
  const int64_t rows = 3, d = 7;
  const double eps = 1e-5;
  const std::vector<T> x = random_values<T>(rows * d, 40, 2.0, 3.0);  // mean far from 0
  const std::vector<T> w = random_values<T>(d, 41, 0.5, 1.0), bias = random_values<T>(d, 42);
  std::vector<T> y(at(rows * d)), mean(at(rows)), rstd(at(rows));
  cpu::layer_norm_forward<T>(x.data(), w.data(), bias.data(), y.data(), mean.data(), rstd.data(), rows, d, eps);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mu += x[at(r * d + i)];
    mu /= d;
    for (int64_t i = 0; i < d; ++i) var += (x[at(r * d + i)] - mu) * (x[at(r * d + i)] - mu);
    var /= d;  // biased
    CHECK(mean[at(r)] == Approx(mu).margin(tolerance<T>()));
    CHECK(rstd[at(r)] == Approx(1.0 / std::sqrt(var + eps)).epsilon(tolerance<T>()));
    for (int64_t i = 0; i < d; ++i) {
      const double expected = (x[at(r * d + i)] - mu) / std::sqrt(var + eps) * w[at(i)] + bias[at(i)];
      CHECK(y[at(r * d + i)] == Approx(expected).margin(4 * tolerance<T>()));
    }
  }
}

// ---- log-softmax and cross-entropy --------------------------------------------------------------

TEMPLATE_TEST_CASE("cpu::log_softmax rows are log-probabilities", "[kernels]", float, double) {
  using T = TestType;
  const int64_t rows = 4, v = 9;
  const std::vector<T> x0 = random_values<T>(rows * v, 50, 5.0, 40.0);  // large logits: needs the max shift
  std::vector<T> x = x0;
  cpu::log_softmax<T>(x.data(), rows, v);
  for (int64_t r = 0; r < rows; ++r) {
    double max_value = -std::numeric_limits<double>::infinity(), z = 0, sum_p = 0;
    for (int64_t k = 0; k < v; ++k) max_value = std::max(max_value, static_cast<double>(x0[at(r * v + k)]));
    for (int64_t k = 0; k < v; ++k) z += std::exp(x0[at(r * v + k)] - max_value);
    for (int64_t k = 0; k < v; ++k) {
      CHECK(x[at(r * v + k)] == Approx(x0[at(r * v + k)] - max_value - std::log(z)).margin(4 * tolerance<T>()));
      sum_p += std::exp(static_cast<double>(x[at(r * v + k)]));
    }
    CHECK(sum_p == Approx(1.0).margin(4 * tolerance<T>()));
  }
}

TEMPLATE_TEST_CASE("cpu::cross_entropy_forward and cross_entropy_fused match the formula of docs/MODEL.md", "[kernels]",
                   float, double) {
  using T = TestType;
  const int64_t rows = 5, v = 7;
  const double eps = 0.1;
  for (const std::int32_t pad : {0, 2}) {
    INFO("pad " << pad);
    // Row 1 has the pad target and is ignored; row 3's target is another row's.
    const std::vector<std::int32_t> targets = {3, pad, 6, 3, pad == 0 ? 1 : 0};
    const std::vector<T> logits = random_values<T>(rows * v, 60, 3.0);
    std::vector<T> lp = logits, grad = logits;
    double loss_sum = 1.0, nll_sum = 2.0;  // the kernels add to these
    cpu::cross_entropy_forward<T>(lp.data(), targets.data(), rows, v, pad, eps, &loss_sum, &nll_sum);
    double fused_loss = 1.0, fused_nll = 2.0;
    cpu::cross_entropy_fused<T>(grad.data(), targets.data(), rows, v, pad, eps, &fused_loss, &fused_nll);
    CHECK(fused_loss == loss_sum);  // the same sums, bit for bit
    CHECK(fused_nll == nll_sum);

    double expected_loss = 1.0, expected_nll = 2.0;
    std::vector<double> expected_grad(at(rows * v), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      double z = 0;
      for (int64_t k = 0; k < v; ++k) z += std::exp(static_cast<double>(logits[at(r * v + k)]));
      std::vector<double> logp(at(v));
      for (int64_t k = 0; k < v; ++k) {
        logp[at(k)] = logits[at(r * v + k)] - std::log(z);
        CHECK(lp[at(r * v + k)] == Approx(logp[at(k)]).margin(4 * tolerance<T>()));  // every row, pad ones too
      }
      const std::int32_t y = targets[at(r)];
      if (y == pad) continue;
      // q(k) = (1 - eps) [k = y] + eps / (V - 1) [k != pad]: sums to 1, nothing on pad.
      double q_sum = 0;
      for (int64_t k = 0; k < v; ++k) {
        const double q = (k == y ? 1.0 - eps : 0.0) + (k != pad ? eps / (v - 1) : 0.0);
        q_sum += q;
        expected_loss -= q * logp[at(k)];
        expected_grad[at(r * v + k)] = std::exp(logp[at(k)]) - q;
      }
      CHECK(q_sum == Approx(1.0).margin(1e-15));
      expected_nll -= logp[at(y)];
    }
    CHECK(loss_sum == Approx(expected_loss).margin(8 * tolerance<T>()));
    CHECK(nll_sum == Approx(expected_nll).margin(8 * tolerance<T>()));

    for (std::size_t i = 0; i < grad.size(); ++i) {
      CHECK(grad[i] == Approx(expected_grad[i]).margin(4 * tolerance<T>()));
    }
    for (int64_t k = 0; k < v; ++k) CHECK(grad[at(1 * v + k)] == T(0));  // the pad row
  }
}

// ---- embeddings and positions -------------------------------------------------------------------

TEST_CASE("cpu::embedding_forward scales the table rows and adds positions", "[kernels]") {
  const int64_t batch = 2, length = 3, d = 4, vocab = 5, positions = 8, offset = 2;
  const std::vector<std::int32_t> ids = {4, 0, 4, 1, 3, 1};
  const std::vector<double> table = random_values<double>(vocab * d, 70),
                            pos = random_values<double>(positions * d, 71);
  std::vector<double> out(at(batch * length * d)), plain(out.size());
  cpu::embedding_forward<double>(ids.data(), table.data(), pos.data(), out.data(), batch * length, length, offset, d,
                                 2.0);
  cpu::embedding_forward<double>(ids.data(), table.data(), nullptr, plain.data(), batch * length, length, offset, d,
                                 2.0);
  for (int64_t r = 0; r < batch * length; ++r) {
    for (int64_t i = 0; i < d; ++i) {
      const double e = 2.0 * table[at(ids[at(r)] * d + i)];
      CHECK(plain[at(r * d + i)] == e);
      CHECK(out[at(r * d + i)] == e + pos[at((offset + r % length) * d + i)]);
    }
  }
}

TEMPLATE_TEST_CASE("cpu::sinusoidal_positions are the paper's interleaved sinusoids", "[kernels]", float, double) {
  using T = TestType;
  const int64_t positions = 6, d = 8;
  std::vector<T> out(at(positions * d));
  cpu::sinusoidal_positions<T>(out.data(), positions, d);
  for (int64_t t = 0; t < positions; ++t) {
    for (int64_t i = 0; 2 * i < d; ++i) {
      const double angle = t / std::pow(10000.0, 2.0 * i / d);
      CHECK(out[at(t * d + 2 * i)] == Approx(std::sin(angle)).margin(1e-7));
      CHECK(out[at(t * d + 2 * i + 1)] == Approx(std::cos(angle)).margin(1e-7));
    }
  }
  // Literal values: position 0 is (0, 1, 0, 1, ...); position 1, pair 0 is (sin 1, cos 1);
  // position 5, pair 1 has angle 5 / 10000^(2/8) = 0.5.
  for (int64_t i = 0; i < d; ++i) CHECK(out[at(i)] == T(i % 2));
  CHECK(out[at(d + 0)] == Approx(0.8414709848078965).margin(1e-7));
  CHECK(out[at(d + 1)] == Approx(0.5403023058681398).margin(1e-7));
  CHECK(out[at(5 * d + 2)] == Approx(0.479425538604203).margin(1e-7));
  CHECK(out[at(5 * d + 3)] == Approx(0.8775825618903728).margin(1e-7));
}

// ---- dropout ------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("cpu::dropout is deterministic, keeps about 1 - p and scales by 1 / (1 - p)", "[kernels]", float,
                   double) {
  using T = TestType;
  const int64_t n = 100003;  // not a multiple of 4: the kernel takes Philox blocks of 4
  const double p = 0.3;
  const std::vector<T> x = random_values<T>(n, 80, 0.5, 1.5);  // in [1, 2): never 0
  std::vector<T> y1(at(n)), y1_again(at(n)), y_stream(at(n)), y_seed(at(n)), y_two(at(n));
  {
    ScopedThreads threads(1);
    cpu::dropout<T>(x.data(), y1.data(), n, p, 42, 7);
    cpu::dropout<T>(x.data(), y1_again.data(), n, p, 42, 7);
  }
  {
    ScopedThreads threads(2);
    cpu::dropout<T>(x.data(), y_two.data(), n, p, 42, 7);
  }
  cpu::dropout<T>(x.data(), y_stream.data(), n, p, 42, 8);
  cpu::dropout<T>(x.data(), y_seed.data(), n, p, 43, 7);
  CHECK(y1 == y1_again);
  CHECK(y1 == y_two);
  CHECK(y1 != y_stream);
  CHECK(y1 != y_seed);

  int64_t kept = 0, mask_mismatches = 0, scale_mismatches = 0, agree_with_other_stream = 0;
  const T keep_scale = static_cast<T>(1.0 / (1.0 - p));
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = y1[at(i)] != T(0);
    kept += keep ? 1 : 0;
    mask_mismatches += keep != (philox::uniform(42, 7, static_cast<std::uint64_t>(i)) >= static_cast<float>(p));
    agree_with_other_stream += keep == (y_stream[at(i)] != T(0));
    scale_mismatches += keep && y1[at(i)] != x[at(i)] * keep_scale;
  }
  CHECK(mask_mismatches == 0);
  CHECK(scale_mismatches == 0);
  // Binomial(1e5, 0.7): standard deviation 0.0015 of the fraction.
  CHECK(static_cast<double>(kept) / n == Approx(1.0 - p).margin(0.01));
  // Independent masks agree on p^2 + (1-p)^2 = 0.58 of the elements.
  CHECK(static_cast<double>(agree_with_other_stream) / n == Approx(0.58).margin(0.01));

  // In place gives the same result.
  std::vector<T> in_place = x;
  cpu::dropout<T>(in_place.data(), in_place.data(), n, p, 42, 7);
  CHECK(in_place == y1);
}

// ---- thread-count independence of the reductions -------------------------------------------------

TEST_CASE("cpu::bias_backward, embedding_backward and layer_norm_backward give the same bits with 1 and 2 threads",
          "[kernels]") {
  // Sizes with several column blocks, so that two threads really split the work.
  const int64_t rows = 257, cols = 200;
  const std::vector<float> dy = random_values<float>(rows * cols, 90);

  // bias_backward accumulates into db.
  std::vector<float> db1 = random_values<float>(cols, 91), db2 = db1;
  const std::vector<float> db0 = db1;
  {
    ScopedThreads threads(1);
    cpu::bias_backward<float>(dy.data(), db1.data(), rows, cols);
  }
  {
    ScopedThreads threads(2);
    cpu::bias_backward<float>(dy.data(), db2.data(), rows, cols);
  }
  CHECK(db1 == db2);
  std::vector<double> ref_db(db0.begin(), db0.end());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) ref_db[at(c)] += dy[at(r * cols + c)];
  }
  CHECK(max_abs_difference(db1, ref_db) < 1e-4);

  // embedding_backward with many repeated ids, accumulating into the table and the positions.
  const int64_t vocab = 11, length = 8, batch = rows / length + 1, positions = 12, offset = 3, d = cols;
  const int64_t erows = batch * length;
  const std::vector<float> dout = random_values<float>(erows * d, 92);
  std::vector<std::int32_t> ids(at(erows));
  for (int64_t r = 0; r < erows; ++r) ids[at(r)] = static_cast<std::int32_t>((r * 7) % vocab);
  std::vector<float> dtable1 = random_values<float>(vocab * d, 93), dtable2 = dtable1;
  std::vector<float> dpos1 = random_values<float>(positions * d, 94), dpos2 = dpos1;
  const std::vector<float> dtable0 = dtable1, dpos0 = dpos1;
  {
    ScopedThreads threads(1);
    cpu::embedding_backward<float>(ids.data(), dout.data(), dtable1.data(), dpos1.data(), erows, length, offset, d,
                                   1.5);
  }
  {
    ScopedThreads threads(2);
    cpu::embedding_backward<float>(ids.data(), dout.data(), dtable2.data(), dpos2.data(), erows, length, offset, d,
                                   1.5);
  }
  CHECK(dtable1 == dtable2);
  CHECK(dpos1 == dpos2);
  std::vector<double> ref_table(dtable0.begin(), dtable0.end()), ref_pos(dpos0.begin(), dpos0.end());
  for (int64_t r = 0; r < erows; ++r) {
    for (int64_t c = 0; c < d; ++c) {
      ref_table[at(ids[at(r)] * d + c)] += 1.5 * dout[at(r * d + c)];
      ref_pos[at((offset + r % length) * d + c)] += dout[at(r * d + c)];
    }
  }
  CHECK(max_abs_difference(dtable1, ref_table) < 1e-4);
  CHECK(max_abs_difference(dpos1, ref_pos) < 1e-4);
  // Positions outside [offset, offset + length) get nothing.
  CHECK(std::equal(dpos0.begin(), dpos0.begin() + offset * d, dpos1.begin()));

  // layer_norm_backward: dx is assigned, dweight and dbias accumulated.
  const std::vector<float> x = random_values<float>(rows * cols, 95, 1.0, 0.5);
  const std::vector<float> w = random_values<float>(cols, 96, 0.5, 1.0), b = random_values<float>(cols, 97);
  std::vector<float> y(at(rows * cols)), mean(at(rows)), rstd(at(rows));
  cpu::layer_norm_forward<float>(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, cols, 1e-5);
  std::vector<float> dx1(at(rows * cols)), dx2(at(rows * cols), 123.0f);
  std::vector<float> dw1 = random_values<float>(cols, 98), dw2 = dw1, dbias1 = random_values<float>(cols, 99),
                     dbias2 = dbias1;
  {
    ScopedThreads threads(1);
    cpu::layer_norm_backward<float>(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx1.data(), dw1.data(),
                                    dbias1.data(), rows, cols);
  }
  {
    ScopedThreads threads(2);
    cpu::layer_norm_backward<float>(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx2.data(), dw2.data(),
                                    dbias2.data(), rows, cols);
  }
  CHECK(dx1 == dx2);
  CHECK(dw1 == dw2);
  CHECK(dbias1 == dbias2);
  CHECK(compute_threads() == resolve_threads(0, ""));  // ScopedThreads restored the default (OMP_NUM_THREADS or all cores)
}

// ---- Adam ---------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("cpu::adam_step matches a hand-computed two-step update", "[kernels]", float, double) {
  using T = TestType;
  // lr 0.1, beta1 0.9, beta2 0.98, eps 1e-9. Element 0: param 1, gradients 0.5 then -0.25.
  //   step 1: m = 0.05, v = 0.02 * 0.25 = 0.005; m^ = 0.05 / 0.1 = 0.5, v^ = 0.005 / 0.02 = 0.25
  //           param = 1 - 0.1 * 0.5 / (0.5 + 1e-9) = 0.9000000002
  //   step 2: m = 0.045 - 0.025 = 0.02, v = 0.0049 + 0.02 * 0.0625 = 0.00615
  //           m^ = 0.02 / 0.19, v^ = 0.00615 / 0.0396; param = 0.9000000002 - 0.1 m^ / (sqrt(v^) + 1e-9)
  //           = 0.8732892289124211
  // Element 1: param -2, gradients 0 then 1: step 1 leaves it (0 / (0 + eps)); step 2: m = 0.1,
  //   v = 0.02, param = -2 - 0.1 (0.1 / 0.19) / (sqrt(0.02 / 0.0396) + 1e-9) = -2.0740591961035277.
  // With weight decay 0.01 the update adds 0.01 * param:
  //   element 0: 1 - 0.1 (0.999999998 + 0.01) = 0.8990000002, then 0.8713902289122212;
  //   element 1: -2 - 0.1 (0 - 0.02) = -1.998, then -1.998 - 0.1 (0.7405919610352784 - 0.01998)
  //              = -2.070061196103528.
  struct Expected {
    double weight_decay;
    double m1[2], v1[2], p1[2], m2[2], v2[2], p2[2];
  };
  const Expected cases[] = {
      {0.0,
       {0.05, 0.0},
       {0.005, 0.0},
       {0.9000000002, -2.0},
       {0.02, 0.1},
       {0.00615, 0.02},
       {0.8732892289124211, -2.0740591961035277}},
      {0.01,
       {0.05, 0.0},
       {0.005, 0.0},
       {0.8990000002, -1.998},
       {0.02, 0.1},
       {0.00615, 0.02},
       {0.8713902289122212, -2.070061196103528}},
  };
  for (const Expected& e : cases) {
    INFO("weight decay " << e.weight_decay);
    std::vector<T> param = {T(1), T(-2)}, m = {T(0), T(0)}, v = {T(0), T(0)};
    cpu::AdamHyper hyper;
    hyper.lr = 0.1, hyper.beta1 = 0.9, hyper.beta2 = 0.98, hyper.eps = 1e-9, hyper.weight_decay = e.weight_decay;
    const double tol = std::is_same<T, float>::value ? 1e-6 : 1e-13;
    const std::vector<T> g1 = {T(0.5), T(0)}, g2 = {T(-0.25), T(1)};
    hyper.step = 1;
    cpu::adam_step<T>(param.data(), g1.data(), m.data(), v.data(), 2, hyper);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(m[i] == Approx(e.m1[i]).margin(tol));
      CHECK(v[i] == Approx(e.v1[i]).margin(tol));
      CHECK(param[i] == Approx(e.p1[i]).margin(tol));
    }
    hyper.step = 2;
    cpu::adam_step<T>(param.data(), g2.data(), m.data(), v.data(), 2, hyper);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(m[i] == Approx(e.m2[i]).margin(tol));
      CHECK(v[i] == Approx(e.v2[i]).margin(tol));
      CHECK(param[i] == Approx(e.p2[i]).margin(tol));
    }
  }
}

// ---- small element-wise kernels and sum_squares --------------------------------------------------

TEST_CASE("cpu element-wise kernels compute their one-line formulas", "[kernels]") {
  const std::vector<double> a = {1, -2, 3, -4, 0, 6}, b = {0.5, 0.5, -1, 2, 3, -6};
  std::vector<double> y(6);
  cpu::add<double>(a.data(), b.data(), y.data(), 6);
  CHECK(y == std::vector<double>{1.5, -1.5, 2, -2, 3, 0});
  cpu::accumulate<double>(y.data(), a.data(), 6);
  CHECK(y == std::vector<double>{2.5, -3.5, 5, -6, 3, 6});
  cpu::scale<double>(y.data(), 2.0, 6);
  CHECK(y == std::vector<double>{5, -7, 10, -12, 6, 12});
  std::vector<double> r(6), dr(6);
  cpu::relu_forward<double>(a.data(), r.data(), 6);
  CHECK(r == std::vector<double>{1, 0, 3, 0, 0, 6});
  cpu::relu_backward<double>(r.data(), b.data(), dr.data(), 6);
  CHECK(dr == std::vector<double>{0.5, 0, -1, 0, 0, -6});
  std::vector<double> m = a;  // [2, 3] plus bias [3]
  const std::vector<double> bias = {10, 20, 30};
  cpu::bias_add<double>(m.data(), bias.data(), 2, 3);
  CHECK(m == std::vector<double>{11, 18, 33, 6, 20, 36});
}

TEMPLATE_TEST_CASE("cpu::sum_squares accumulates in double independently of the thread count", "[kernels]", float,
                   double) {
  using T = TestType;
  const std::vector<T> small = {T(1), T(-2), T(3)};
  CHECK(cpu::sum_squares<T>(small.data(), 3) == 14.0);
  CHECK(cpu::sum_squares<T>(small.data(), 0) == 0.0);
  const int64_t n = 200003;  // several blocks of 65536 and a partial one
  const std::vector<T> x = random_values<T>(n, 100);
  double expected = 0;
  for (const T value : x) expected += static_cast<double>(value) * static_cast<double>(value);
  double one = 0, two = 0;
  {
    ScopedThreads threads(1);
    one = cpu::sum_squares<T>(x.data(), n);
  }
  {
    ScopedThreads threads(2);
    two = cpu::sum_squares<T>(x.data(), n);
  }
  CHECK(one == two);
  CHECK(one == Approx(expected).epsilon(1e-12));
}

}  // namespace dragoman
