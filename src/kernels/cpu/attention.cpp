// Scaled dot-product attention (see attention.h).
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/numeric.h"
#include "core/philox.h"
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
    score.resize(std::max<std::size_t>(score.size(), static_cast<std::size_t>(S)));
    out_acc.resize(static_cast<std::size_t>(Kv));
    for (std::int64_t t = 0; t < Tq; ++t) {
      const std::int64_t n = visible_keys(a, key_lengths[b], t);
      const Acc max_score = scores(a, q, k, b, h, t, n, static_cast<Acc>(scale), score);
      Acc sum = 0;
      if constexpr (std::is_same_v<Acc, float>) {
        sum = exp_store_f32(score.data(), n, max_score, score.data());
      } else {
        for (std::int64_t s = 0; s < n; ++s) {
          score[static_cast<std::size_t>(s)] = std::exp(score[static_cast<std::size_t>(s)] - max_score);
          sum += score[static_cast<std::size_t>(s)];
        }
      }
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

template <typename T>
void attention_backward(const AttentionShape& a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                        double scale, double dropout_p, std::uint64_t seed, std::uint64_t rng_stream,
                        const acc_t<T>* lse, const T* dout, T* dq, T* dk, T* dv) {
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
        if constexpr (std::is_same_v<T, float>) {
          dp = dot_f32(do_t, vs, Kv);
        } else {
          for (std::int64_t i = 0; i < Kv; ++i) dp += load(do_t[i]) * load(vs[i]);
        }
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

#define DRAGOMAN_INSTANTIATE(T)                                                                                        \
  template void attention_forward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*, double, \
                                     double, std::uint64_t, std::uint64_t, acc_t<T>*, T*);                             \
  template void attention_backward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*,        \
                                      double, double, std::uint64_t, std::uint64_t, const acc_t<T>*, const T*, T*, T*, \
                                      T*);
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cpu
