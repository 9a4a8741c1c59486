// Scaled dot-product attention (see attention.h).
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/philox.h"

namespace dragoman::cpu {
namespace {

// The number of keys query t may see.
std::int64_t visible_keys(const AttentionShape& a, std::int32_t key_length, std::int64_t t) {
  std::int64_t n = std::min<std::int64_t>(key_length, a.keys);
  if (a.causal) n = std::min(n, a.query_offset + t + 1);
  return std::max<std::int64_t>(n, 0);
}

// score[s] = scale * (q_t . k_s) for the n visible keys of query t of (b, h); returns their maximum.
template <typename T>
double scores(const AttentionShape& a, const T* q, const T* k, std::int64_t b, std::int64_t h, std::int64_t t,
              std::int64_t n, double scale, std::vector<double>& score) {
  const std::int64_t K = a.key_size;
  const T* qt = q + b * a.q_batch_stride + t * a.q_row_stride + h * K;
  double max_score = -std::numeric_limits<double>::infinity();
  for (std::int64_t s = 0; s < n; ++s) {
    const T* ks = k + b * a.k_batch_stride + s * a.k_row_stride + h * K;
    double dot = 0;
    for (std::int64_t i = 0; i < K; ++i) dot += static_cast<double>(qt[i]) * ks[i];
    score[static_cast<std::size_t>(s)] = dot * scale;
    max_score = std::max(max_score, dot * scale);
  }
  return max_score;
}

// Whether attention dropout keeps element `index` of [B, H, T, S].
bool kept(double dropout_p, std::uint64_t seed, std::uint64_t rng_stream, std::int64_t index) {
  return philox::uniform(seed, rng_stream, static_cast<std::uint64_t>(index)) >= static_cast<float>(dropout_p);
}

}  // namespace

template <typename T>
void attention_forward(const AttentionShape& a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                       double scale, double dropout_p, std::uint64_t seed, std::uint64_t rng_stream, T* lse, T* out) {
  const std::int64_t B = a.batch, H = a.heads, Tq = a.queries, S = a.keys, Kv = a.value_size;
  const T keep_scale = static_cast<T>(1.0 / (1.0 - dropout_p));
#pragma omp parallel for schedule(static)
  for (std::int64_t bh = 0; bh < B * H; ++bh) {
    const std::int64_t b = bh / H, h = bh % H;
    std::vector<double> score(static_cast<std::size_t>(S));
    for (std::int64_t t = 0; t < Tq; ++t) {
      const std::int64_t n = visible_keys(a, key_lengths[b], t);
      const double max_score = scores(a, q, k, b, h, t, n, scale, score);
      double sum = 0;
      for (std::int64_t s = 0; s < n; ++s) {
        score[static_cast<std::size_t>(s)] = std::exp(score[static_cast<std::size_t>(s)] - max_score);
        sum += score[static_cast<std::size_t>(s)];
      }
      if (lse != nullptr) lse[bh * Tq + t] = static_cast<T>(n > 0 ? max_score + std::log(sum) : 0.0);
      const std::int64_t row = (bh * Tq + t) * S;
      T* out_t = out + b * a.out_batch_stride + t * a.out_row_stride + h * Kv;
      std::fill(out_t, out_t + Kv, T(0));
      for (std::int64_t s = 0; s < n; ++s) {
        const T p = static_cast<T>(score[static_cast<std::size_t>(s)] / sum);
        const T pd = dropout_p <= 0 ? p : kept(dropout_p, seed, rng_stream, row + s) ? p * keep_scale : T(0);
        if (pd == T(0)) continue;
        const T* vs = v + b * a.v_batch_stride + s * a.v_row_stride + h * Kv;
        for (std::int64_t i = 0; i < Kv; ++i) out_t[i] += pd * vs[i];
      }
    }
  }
}

template <typename T>
void attention_backward(const AttentionShape& a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                        double scale, double dropout_p, std::uint64_t seed, std::uint64_t rng_stream, const T* lse,
                        const T* dout, T* dq, T* dk, T* dv) {
  const std::int64_t B = a.batch, H = a.heads, Tq = a.queries, S = a.keys, K = a.key_size, Kv = a.value_size;
  const double keep_scale = 1.0 / (1.0 - dropout_p);
#pragma omp parallel for schedule(static)
  for (std::int64_t bh = 0; bh < B * H; ++bh) {
    const std::int64_t b = bh / H, h = bh % H;
    // Zero this (b, h)'s dk and dv slices, which the loop over queries accumulates into.
    for (std::int64_t s = 0; s < S; ++s) {
      std::fill_n(dk + b * a.k_batch_stride + s * a.k_row_stride + h * K, K, T(0));
      std::fill_n(dv + b * a.v_batch_stride + s * a.v_row_stride + h * Kv, Kv, T(0));
    }
    std::vector<double> prob(static_cast<std::size_t>(S)), dprob(static_cast<std::size_t>(S));
    for (std::int64_t t = 0; t < Tq; ++t) {
      const std::int64_t row = (bh * Tq + t) * S;
      const T* do_t = dout + b * a.out_batch_stride + t * a.out_row_stride + h * Kv;
      const std::int64_t n = visible_keys(a, key_lengths[b], t);
      // The probabilities again, from the scores and the saved log-sum-exp.
      scores(a, q, k, b, h, t, n, scale, prob);
      const double log_sum = static_cast<double>(lse[bh * Tq + t]);
      for (std::int64_t s = 0; s < n; ++s) {
        prob[static_cast<std::size_t>(s)] = std::exp(prob[static_cast<std::size_t>(s)] - log_sum);
      }
      // dprobs[s] = dropout'(dout . v[s]); softmax backward: dscore = p * (dprobs - sum(p * dprobs)).
      double dot_sum = 0;
      for (std::int64_t s = 0; s < n; ++s) {
        const double p = prob[static_cast<std::size_t>(s)];
        const T* vs = v + b * a.v_batch_stride + s * a.v_row_stride + h * Kv;
        double dp = 0;
        for (std::int64_t i = 0; i < Kv; ++i) dp += static_cast<double>(do_t[i]) * vs[i];
        const bool keep = dropout_p <= 0 || kept(dropout_p, seed, rng_stream, row + s);
        const double mask = dropout_p <= 0 ? 1.0 : keep ? keep_scale : 0.0;
        dp *= mask;
        dprob[static_cast<std::size_t>(s)] = dp;
        dot_sum += p * dp;
        // dv[s] += dropped[t, s] * dout[t]
        T* dvs = dv + b * a.v_batch_stride + s * a.v_row_stride + h * Kv;
        const T pd = static_cast<T>(p * mask);
        for (std::int64_t i = 0; i < Kv; ++i) dvs[i] += pd * do_t[i];
      }
      const T* qt = q + b * a.q_batch_stride + t * a.q_row_stride + h * K;
      T* dqt = dq + b * a.q_batch_stride + t * a.q_row_stride + h * K;
      std::fill_n(dqt, K, T(0));
      for (std::int64_t s = 0; s < n; ++s) {
        const T ds =
            static_cast<T>(prob[static_cast<std::size_t>(s)] * (dprob[static_cast<std::size_t>(s)] - dot_sum) * scale);
        const T* ks = k + b * a.k_batch_stride + s * a.k_row_stride + h * K;
        T* dks = dk + b * a.k_batch_stride + s * a.k_row_stride + h * K;
        for (std::int64_t i = 0; i < K; ++i) {
          dqt[i] += ds * ks[i];
          dks[i] += ds * qt[i];
        }
      }
    }
  }
}

template void attention_forward<float>(const AttentionShape&, const float*, const float*, const float*,
                                       const std::int32_t*, double, double, std::uint64_t, std::uint64_t, float*,
                                       float*);
template void attention_forward<double>(const AttentionShape&, const double*, const double*, const double*,
                                        const std::int32_t*, double, double, std::uint64_t, std::uint64_t, double*,
                                        double*);
template void attention_backward<float>(const AttentionShape&, const float*, const float*, const float*,
                                        const std::int32_t*, double, double, std::uint64_t, std::uint64_t, const float*,
                                        const float*, float*, float*, float*);
template void attention_backward<double>(const AttentionShape&, const double*, const double*, const double*,
                                         const std::int32_t*, double, double, std::uint64_t, std::uint64_t,
                                         const double*, const double*, double*, double*, double*);

}  // namespace dragoman::cpu
