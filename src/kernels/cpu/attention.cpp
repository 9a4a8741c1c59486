// Scaled dot-product attention (see attention.h).
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "base/numeric.h"
#include "base/philox.h"
#include "kernels/common/dropout.h"
#include "kernels/cpu/vector_math.h"

namespace dragoman::cpu {
namespace {

// The number of keys query t may see.
std::int64_t visible_keys(const AttentionShape& a, std::int32_t key_length, std::int64_t t) {
  std::int64_t n = std::min<std::int64_t>(key_length, a.keys);
  if (a.causal) n = std::min(n, a.query_offset + t + 1);
  return std::max<std::int64_t>(n, 0);
}

// score[s] = scale * (q_t . k_s) for the n visible keys of query t of (b, h), in acc_t<T>; returns
// their maximum.
template <typename T>
acc_t<T> scores(const AttentionShape& a, const T* q, const T* k, std::int64_t b, std::int64_t h, std::int64_t t,
                std::int64_t n, acc_t<T> scale, std::vector<acc_t<T>>& score) {
  using Acc = acc_t<T>;
  const std::int64_t K = a.key_size;
  const T* qt = q + b * a.q_batch_stride + t * a.q_row_stride + h * K;
  if constexpr (std::is_same_v<T, float>) {
    return scaled_dots_f32(qt, k + b * a.k_batch_stride + h * K, a.k_row_stride, n, K, scale, score.data());
  }
  Acc max_score = -std::numeric_limits<Acc>::infinity();
  for (std::int64_t s = 0; s < n; ++s) {
    const T* ks = k + b * a.k_batch_stride + s * a.k_row_stride + h * K;
    Acc dot = 0;
    for (std::int64_t i = 0; i < K; ++i) dot += load(qt[i]) * load(ks[i]);
    score[static_cast<std::size_t>(s)] = dot * scale;
    max_score = std::max(max_score, dot * scale);
  }
  return max_score;
}

// score[s] = exp(score[s] - max_score) for the n visible keys (the softmax's numerators); returns
// their sum.
template <typename Acc>
Acc exp_scores(std::vector<Acc>& score, std::int64_t n, Acc max_score) {
  if constexpr (std::is_same_v<Acc, float>) {
    return exp_store_f32(score.data(), n, max_score, score.data());
  } else {
    Acc sum = 0;
    for (std::int64_t s = 0; s < n; ++s) {
      score[static_cast<std::size_t>(s)] = std::exp(score[static_cast<std::size_t>(s)] - max_score);
      sum += score[static_cast<std::size_t>(s)];
    }
    return sum;
  }
}

// Queries per (b, h) from which the f32 forward transposes the keys once for all of them
// (scaled_dots_transposed_f32: the same bits as the per-query scaled_dots_f32, so the choice never
// changes a result, only its speed). Decoding's one query a step reads the cache as it is.
constexpr std::int64_t kTransposeFrom = 4;

// dst[i * ld + s] = the element i of row s of `rows` (stride `stride`, `n` rows of `size`), with
// ld = n rounded up to 16 and the columns n .. ld zero: the layout of scaled_dots_transposed_f32.
std::int64_t transpose_rows(const float* rows, std::int64_t stride, std::int64_t n, std::int64_t size,
                            std::vector<float>& dst) {
  const std::int64_t ld = (n + kVectorLanes - 1) / kVectorLanes * kVectorLanes;
  dst.resize(std::max<std::size_t>(dst.size(), static_cast<std::size_t>(size * ld)));
  for (std::int64_t i = 0; i < size; ++i) {
    float* out = dst.data() + i * ld;
    for (std::int64_t s = 0; s < n; ++s) out[s] = rows[s * stride + i];
    std::fill(out + n, out + ld, 0.0f);
  }
  return ld;
}

// Whether attention dropout keeps element `index` of [B, H, T, S].
bool kept(double dropout_p, std::uint64_t seed, std::uint64_t rng_stream, std::int64_t index) {
  return common::dropout_keeps(philox::bits(seed, rng_stream, static_cast<std::uint64_t>(index)),
                               static_cast<float>(dropout_p));
}

}  // namespace

template <typename T>
void attention_forward(const AttentionShape& a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                       double scale, double dropout_p, std::uint64_t seed, std::uint64_t rng_stream, acc_t<T>* lse,
                       T* out) {
  using Acc = acc_t<T>;
  const std::int64_t B = a.batch, H = a.heads, Tq = a.queries, S = a.keys, Kv = a.value_size;
  const Acc keep_scale = static_cast<Acc>(1.0 / (1.0 - dropout_p));
#pragma omp parallel for schedule(static)
  for (std::int64_t bh = 0; bh < B * H; ++bh) {
    const std::int64_t b = bh / H, h = bh % H;
    // Each thread's buffers, kept between calls: decoding calls this per layer and token with a
    // few keys per (b, h), where two allocations per (b, h) cost as much as the arithmetic.
    thread_local std::vector<Acc> score, out_acc;
    thread_local std::vector<float> keys_t;
    score.resize(std::max<std::size_t>(score.size(), static_cast<std::size_t>(S)));
    out_acc.resize(static_cast<std::size_t>(Kv));
    std::int64_t ld = 0;  // > 0: this (b, h)'s keys transposed in keys_t
    if constexpr (std::is_same_v<T, float>) {
      if (Tq >= kTransposeFrom) {
        ld = transpose_rows(k + b * a.k_batch_stride + h * a.key_size, a.k_row_stride,
                            visible_keys(a, key_lengths[b], Tq - 1), a.key_size, keys_t);
      }
    }
    for (std::int64_t t = 0; t < Tq; ++t) {
      const std::int64_t n = visible_keys(a, key_lengths[b], t);
      Acc max_score;
      if constexpr (std::is_same_v<T, float>) {
        max_score =
            ld > 0 ? scaled_dots_transposed_f32(q + b * a.q_batch_stride + t * a.q_row_stride + h * a.key_size,
                                                keys_t.data(), ld, n, a.key_size, static_cast<Acc>(scale), score.data())
                   : scores(a, q, k, b, h, t, n, static_cast<Acc>(scale), score);
      } else {
        max_score = scores(a, q, k, b, h, t, n, static_cast<Acc>(scale), score);
      }
      const Acc sum = exp_scores(score, n, max_score);
      if (lse != nullptr) lse[bh * Tq + t] = n > 0 ? max_score + std::log(sum) : Acc(0);
      const std::int64_t row = (bh * Tq + t) * S;
      std::fill(out_acc.begin(), out_acc.end(), Acc(0));
      for (std::int64_t s = 0; s < n; ++s) {
        const Acc p = score[static_cast<std::size_t>(s)] / sum;
        const Acc pd = dropout_p <= 0 ? p : kept(dropout_p, seed, rng_stream, row + s) ? p * keep_scale : Acc(0);
        if constexpr (std::is_same_v<T, float>) {
          score[static_cast<std::size_t>(s)] = pd;  // the weights, for add_weighted_rows_f32 below
          continue;
        }
        if (pd == Acc(0)) continue;
        const T* vs = v + b * a.v_batch_stride + s * a.v_row_stride + h * Kv;
        for (std::int64_t i = 0; i < Kv; ++i) out_acc[static_cast<std::size_t>(i)] += pd * load(vs[i]);
      }
      if constexpr (std::is_same_v<T, float>) {
        add_weighted_rows_f32(score.data(), v + b * a.v_batch_stride + h * Kv, a.v_row_stride, n, Kv, out_acc.data());
      }
      T* out_t = out + b * a.out_batch_stride + t * a.out_row_stride + h * Kv;
      for (std::int64_t i = 0; i < Kv; ++i) out_t[i] = store<T>(out_acc[static_cast<std::size_t>(i)]);
    }
  }
}

namespace {

// attention_backward for f32, the same operations in the same order as the generic loops below, with
// (b, h)'s keys and values transposed once for the dot products of all its queries and the sums
// over keys in the row kernels of vector_math.h.
void attention_backward_f32(const AttentionShape& a, const float* q, const float* k, const float* v,
                            const std::int32_t* key_lengths, double scale, double dropout_p, std::uint64_t seed,
                            std::uint64_t rng_stream, const float* lse, const float* dout, float* dq, float* dk,
                            float* dv) {
  const std::int64_t B = a.batch, H = a.heads, Tq = a.queries, S = a.keys, K = a.key_size, Kv = a.value_size;
  const float keep_scale = static_cast<float>(1.0 / (1.0 - dropout_p)), scale_f = static_cast<float>(scale);
#pragma omp parallel for schedule(static)
  for (std::int64_t bh = 0; bh < B * H; ++bh) {
    const std::int64_t b = bh / H, h = bh % H;
    std::vector<float> dk_acc(static_cast<std::size_t>(S * K)), dv_acc(static_cast<std::size_t>(S * Kv));
    std::vector<float> dq_acc(static_cast<std::size_t>(K));
    std::vector<float> prob(static_cast<std::size_t>(S)), dprob(static_cast<std::size_t>(S));
    std::vector<float> weight(static_cast<std::size_t>(S)), dscore(static_cast<std::size_t>(S));
    std::vector<float> keys_t, values_t;
    const float* kb = k + b * a.k_batch_stride + h * K;
    const float* vb = v + b * a.v_batch_stride + h * Kv;
    const std::int64_t last = Tq > 0 ? visible_keys(a, key_lengths[b], Tq - 1) : 0;
    const std::int64_t ld = transpose_rows(kb, a.k_row_stride, last, K, keys_t);
    transpose_rows(vb, a.v_row_stride, last, Kv, values_t);
    for (std::int64_t t = 0; t < Tq; ++t) {
      const std::int64_t row = (bh * Tq + t) * S;
      const float* do_t = dout + b * a.out_batch_stride + t * a.out_row_stride + h * Kv;
      const float* qt = q + b * a.q_batch_stride + t * a.q_row_stride + h * K;
      const std::int64_t n = visible_keys(a, key_lengths[b], t);
      // The probabilities again, from the scores and the saved log-sum-exp; dprobs[s] = dout . v[s].
      scaled_dots_transposed_f32(qt, keys_t.data(), ld, n, K, scale_f, prob.data());
      exp_store_f32(prob.data(), n, lse[bh * Tq + t], prob.data());
      scaled_dots_transposed_f32(do_t, values_t.data(), ld, n, Kv, 1.0f, dprob.data());
      float dot_sum = 0;
      for (std::int64_t s = 0; s < n; ++s) {
        const float p = prob[static_cast<std::size_t>(s)];
        const bool keep = dropout_p <= 0 || kept(dropout_p, seed, rng_stream, row + s);
        const float mask = dropout_p <= 0 ? 1.0f : keep ? keep_scale : 0.0f;
        const float dp = dprob[static_cast<std::size_t>(s)] * mask;
        dprob[static_cast<std::size_t>(s)] = dp;
        dot_sum += p * dp;
        weight[static_cast<std::size_t>(s)] = p * mask;
      }
      add_outer_f32(weight.data(), do_t, n, Kv, dv_acc.data(), Kv);  // dv[s] += dropped[t, s] * dout[t]
      for (std::int64_t s = 0; s < n; ++s) {
        dscore[static_cast<std::size_t>(s)] =
            prob[static_cast<std::size_t>(s)] * (dprob[static_cast<std::size_t>(s)] - dot_sum) * scale_f;
      }
      std::fill(dq_acc.begin(), dq_acc.end(), 0.0f);
      add_rows_f32(dscore.data(), kb, a.k_row_stride, n, K, dq_acc.data());
      add_outer_f32(dscore.data(), qt, n, K, dk_acc.data(), K);
      float* dqt = dq + b * a.q_batch_stride + t * a.q_row_stride + h * K;
      std::copy(dq_acc.begin(), dq_acc.end(), dqt);
    }
    for (std::int64_t s = 0; s < S; ++s) {
      std::copy_n(dk_acc.data() + s * K, K, dk + b * a.k_batch_stride + s * a.k_row_stride + h * K);
      std::copy_n(dv_acc.data() + s * Kv, Kv, dv + b * a.v_batch_stride + s * a.v_row_stride + h * Kv);
    }
  }
}

}  // namespace

template <typename T>
void attention_backward(const AttentionShape& a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                        double scale, double dropout_p, std::uint64_t seed, std::uint64_t rng_stream,
                        const acc_t<T>* lse, const T* dout, T* dq, T* dk, T* dv) {
  if constexpr (std::is_same_v<T, float>) {
    attention_backward_f32(a, q, k, v, key_lengths, scale, dropout_p, seed, rng_stream, lse, dout, dq, dk, dv);
  } else {
    using Acc = acc_t<T>;
    const std::int64_t B = a.batch, H = a.heads, Tq = a.queries, S = a.keys, K = a.key_size, Kv = a.value_size;
    const Acc keep_scale = static_cast<Acc>(1.0 / (1.0 - dropout_p)), scale_acc = static_cast<Acc>(scale);
#pragma omp parallel for schedule(static)
    for (std::int64_t bh = 0; bh < B * H; ++bh) {
      const std::int64_t b = bh / H, h = bh % H;
      // This (b, h)'s gradients, summed over the queries in acc_t<T> and stored once at the end.
      std::vector<Acc> dk_acc(static_cast<std::size_t>(S * K)), dv_acc(static_cast<std::size_t>(S * Kv));
      std::vector<Acc> dq_acc(static_cast<std::size_t>(K));
      std::vector<Acc> prob(static_cast<std::size_t>(S)), dprob(static_cast<std::size_t>(S));
      for (std::int64_t t = 0; t < Tq; ++t) {
        const std::int64_t row = (bh * Tq + t) * S;
        const T* do_t = dout + b * a.out_batch_stride + t * a.out_row_stride + h * Kv;
        const std::int64_t n = visible_keys(a, key_lengths[b], t);
        // The probabilities again, from the scores and the saved log-sum-exp.
        scores(a, q, k, b, h, t, n, scale_acc, prob);
        const Acc log_sum = lse[bh * Tq + t];
        if constexpr (std::is_same_v<Acc, float>) {
          exp_store_f32(prob.data(), n, log_sum, prob.data());
        } else {
          for (std::int64_t s = 0; s < n; ++s) {
            prob[static_cast<std::size_t>(s)] = std::exp(prob[static_cast<std::size_t>(s)] - log_sum);
          }
        }
        // dprobs[s] = dropout'(dout . v[s]); softmax backward: dscore = p * (dprobs - sum(p * dprobs)).
        Acc dot_sum = 0;
        for (std::int64_t s = 0; s < n; ++s) {
          const Acc p = prob[static_cast<std::size_t>(s)];
          const T* vs = v + b * a.v_batch_stride + s * a.v_row_stride + h * Kv;
          Acc dp = 0;
          for (std::int64_t i = 0; i < Kv; ++i) dp += load(do_t[i]) * load(vs[i]);
          const bool keep = dropout_p <= 0 || kept(dropout_p, seed, rng_stream, row + s);
          const Acc mask = dropout_p <= 0 ? Acc(1) : keep ? keep_scale : Acc(0);
          dp *= mask;
          dprob[static_cast<std::size_t>(s)] = dp;
          dot_sum += p * dp;
          // dv[s] += dropped[t, s] * dout[t]
          Acc* dvs = dv_acc.data() + s * Kv;
          const Acc pd = p * mask;
          for (std::int64_t i = 0; i < Kv; ++i) dvs[i] += pd * load(do_t[i]);
        }
        const T* qt = q + b * a.q_batch_stride + t * a.q_row_stride + h * K;
        std::fill(dq_acc.begin(), dq_acc.end(), Acc(0));
        for (std::int64_t s = 0; s < n; ++s) {
          const Acc ds = prob[static_cast<std::size_t>(s)] * (dprob[static_cast<std::size_t>(s)] - dot_sum) * scale_acc;
          const T* ks = k + b * a.k_batch_stride + s * a.k_row_stride + h * K;
          Acc* dks = dk_acc.data() + s * K;
          for (std::int64_t i = 0; i < K; ++i) {
            dq_acc[static_cast<std::size_t>(i)] += ds * load(ks[i]);
            dks[i] += ds * load(qt[i]);
          }
        }
        T* dqt = dq + b * a.q_batch_stride + t * a.q_row_stride + h * K;
        for (std::int64_t i = 0; i < K; ++i) dqt[i] = store<T>(dq_acc[static_cast<std::size_t>(i)]);
      }
      for (std::int64_t s = 0; s < S; ++s) {
        T* dks = dk + b * a.k_batch_stride + s * a.k_row_stride + h * K;
        T* dvs = dv + b * a.v_batch_stride + s * a.v_row_stride + h * Kv;
        for (std::int64_t i = 0; i < K; ++i) dks[i] = store<T>(dk_acc[static_cast<std::size_t>(s * K + i)]);
        for (std::int64_t i = 0; i < Kv; ++i) dvs[i] = store<T>(dv_acc[static_cast<std::size_t>(s * Kv + i)]);
      }
    }
  }
}

template <typename T>
void attention_probabilities(const AttentionShape& a, const T* q, const T* k, const std::int32_t* key_lengths,
                             double scale, float* probs) {
  using Acc = acc_t<T>;
  const std::int64_t B = a.batch, H = a.heads, Tq = a.queries, S = a.keys;
#pragma omp parallel for schedule(static)
  for (std::int64_t bh = 0; bh < B * H; ++bh) {
    const std::int64_t b = bh / H, h = bh % H;
    thread_local std::vector<Acc> score;
    score.resize(std::max<std::size_t>(score.size(), static_cast<std::size_t>(S)));
    for (std::int64_t t = 0; t < Tq; ++t) {
      const std::int64_t n = visible_keys(a, key_lengths[b], t);
      const Acc max_score = scores(a, q, k, b, h, t, n, static_cast<Acc>(scale), score);
      const Acc sum = exp_scores(score, n, max_score);
      float* row = probs + (bh * Tq + t) * S;
      for (std::int64_t s = 0; s < n; ++s) row[s] = static_cast<float>(score[static_cast<std::size_t>(s)] / sum);
      std::fill(row + n, row + S, 0.0f);
    }
  }
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                        \
  template void attention_forward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*, double, \
                                     double, std::uint64_t, std::uint64_t, acc_t<T>*, T*);                             \
  template void attention_backward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*,        \
                                      double, double, std::uint64_t, std::uint64_t, const acc_t<T>*, const T*, T*, T*, \
                                      T*);                                                                             \
  template void attention_probabilities<T>(const AttentionShape&, const T*, const T*, const std::int32_t*, double,     \
                                           float*);
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cpu
