// Attention: cpu::attention_forward against a naive per-head softmax (key padding, causal mask, one
// query against a strided cache, fully masked rows, dropout), and ops::attention's backward pass
// against float64 central finite differences (padding, causal, attention dropout, three heads with
// K != Kv and T != S, a query offset, strided cache views); for every OpCase at awkward key counts
// and head sizes, forward and backward against a double reference from the rounded inputs, each
// output rounded once (the log-sum-exp kept in the accumulator type), with sentinels (the CPU's
// tests); for every op case (each device and dtype of the test binary), strided cache views of k and
// v give the bits of contiguous ones.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/philox.h"
#include "core/tensor.h"
#include "kernels/attention.h"
#include "ops/attention.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;
using namespace test;  // the shared helpers of tests/ops/op_testing.h

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

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::attention_forward matches a naive per-head softmax", "[kernels]", float, double) {
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

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::attention_probabilities are the forward's probabilities", "[kernels]", float,
                                double) {
  using T = TestType;
  const int64_t B = 3, H = 2, K = 3;
  for (const bool causal : {false, true}) {
    for (const int64_t queries : {1, 5}) {  // one query (decoding), and enough for the transposed f32 path
      INFO("causal " << causal << ", " << queries << " queries");
      const int64_t S = 5;
      // Values one-hot over the keys, per head: the forward's output is then its probabilities.
      const int64_t Kv = S;
      cpu::AttentionShape a = contiguous_shape(B, H, queries, S, K, Kv);
      a.causal = causal;
      a.query_offset = causal ? S - queries : 0;
      const std::vector<std::int32_t> lengths = {5, 3, 0};
      const std::vector<T> q = random_values<T>(B * queries * H * K, 20, 1.5),
                           k = random_values<T>(B * S * H * K, 21, 1.5);
      std::vector<T> v(at(B * S * H * Kv), T(0));
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t s = 0; s < S; ++s) {
          for (int64_t h = 0; h < H; ++h) v[at(b * a.v_batch_stride + s * a.v_row_stride + h * Kv + s)] = T(1);
        }
      }
      const double scale = 1.0 / std::sqrt(static_cast<double>(K));
      std::vector<float> probs(at(B * H * queries * S), 7.0f);  // sentinels
      cpu::attention_probabilities<T>(a, q.data(), k.data(), lengths.data(), scale, probs.data());
      std::vector<T> out(at(B * queries * H * Kv), T(7));
      cpu::attention_forward<T>(a, q.data(), k.data(), v.data(), lengths.data(), scale, 0.0, 0, 0, nullptr, out.data());
      const NaiveAttention ref = naive_attention(a, q, k, v, lengths, scale);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t t = 0; t < queries; ++t) {
            double sum = 0;
            for (int64_t s = 0; s < S; ++s) {
              const float p = probs[at(((b * H + h) * queries + t) * S + s)];
              // The same value the forward weighs the values with (rounded to float).
              CHECK(p == static_cast<float>(out[at(b * a.out_batch_stride + t * a.out_row_stride + h * Kv + s)]));
              CHECK(p == Approx(ref.probs[at(((b * H + h) * queries + t) * S + s)]).margin(1e-6));
              sum += p;
            }
            CHECK(sum == Approx(lengths[at(b)] > 0 ? 1.0 : 0.0).margin(1e-5));
          }
        }
      }
    }
  }
}

DRAGOMAN_CPU_TEST_CASE("cpu::attention_forward of a fully masked row gives zero output and log-sum-exp", "[kernels]") {
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

DRAGOMAN_CPU_TEST_CASE("cpu::attention_forward of one query against a strided key/value cache", "[kernels]") {
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

DRAGOMAN_CPU_TEST_CASE("ops::attention gradients match finite differences", "[ops]") {
  struct Case {
    const char* name;
    int64_t batch, heads, queries, keys, key_size, value_size;
    std::vector<std::int32_t> lengths;
    bool causal;
    int64_t query_offset;
    double dropout;
  };
  const std::vector<Case> cases = {
      {"key padding with different lengths", 3, 2, 4, 5, 3, 3, {5, 2, 1}, false, 0, 0.0},
      {"causal", 2, 2, 5, 5, 2, 2, {5, 3}, true, 0, 0.0},
      {"attention dropout", 2, 2, 3, 4, 3, 2, {4, 3}, false, 0, 0.2},
      {"three heads, K != Kv and T != S", 2, 3, 2, 4, 2, 3, {4, 3}, false, 0, 0.0},
      {"causal with a query offset", 2, 2, 2, 5, 2, 3, {5, 4}, true, 3, 0.0},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const int64_t B = c.batch, H = c.heads;
      // q, k, v are perturbed by check_gradient.
      Tensor q = random64({B, c.queries, H * c.key_size}, 30, 1.5);
      Tensor k = random64({B, c.keys, H * c.key_size}, 31, 1.5);
      Tensor v = random64({B, c.keys, H * c.value_size}, 32);
      const Tensor r = random64({B, c.queries, H * c.value_size}, 33);
      const Tensor lengths = ids_tensor(c.lengths, {B});
      ops::AttentionOptions options;
      options.heads = H;
      options.causal = c.causal;
      options.query_offset = c.query_offset;
      options.dropout = c.dropout;
      options.seed = 17;
      options.rng_stream = 3;
      const auto loss = [&] { return dot(ops::attention(q, k, v, lengths, options, nullptr), r); };
      ops::AttentionSaved saved;
      ops::attention(q, k, v, lengths, options, &saved);
      CHECK(saved.lse.shape() == Shape{B, H, c.queries});  // all the backward pass keeps
      const ops::AttentionGrads g = ops::attention_backward(q, k, v, lengths, options, saved, r);
      check_gradient("q", loss, q, g.dq);
      check_gradient("k", loss, k, g.dk);
      check_gradient("v", loss, v, g.dv);
    }
  }
}

TEST_CASE("ops::attention reads k and v through strided cache views", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      // A [B, P, H*K] cache narrowed to its first S rows gives what contiguous k and v give: the
      // same kernel on the same rows, so the same bits.
      const int64_t B = 2, H = 2, K = 3, P = 6, S = 4;
      const auto random = [&](const Shape& shape, std::uint64_t rng_stream) {
        return test::from_doubles(test::random_doubles(shape_numel(shape), rng_stream), shape, c.dtype, c.device);
      };
      const Tensor k_cache = random({B, P, H * K}, 40), v_cache = random({B, P, H * K}, 41);
      const Tensor k = k_cache.narrow(1, 0, S), v = v_cache.narrow(1, 0, S);
      REQUIRE_FALSE(k.is_contiguous());
      const Tensor q = random({B, 1, H * K}, 42), r = random({B, 1, H * K}, 43);
      const Tensor lengths = ids_tensor({S, S - 1}, {B});  // on the CPU: the op takes them there too
      ops::AttentionOptions options;
      options.heads = H;
      options.causal = true;
      options.query_offset = S - 1;
      ops::AttentionSaved saved, saved_c;
      const Tensor out = ops::attention(q, k, v, lengths, options, &saved);
      const Tensor out_c = ops::attention(q, k.contiguous(), v.contiguous(), lengths, options, &saved_c);
      CHECK(test::to_doubles(out) == test::to_doubles(out_c));
      const ops::AttentionGrads g = ops::attention_backward(q, k, v, lengths, options, saved, r);
      const ops::AttentionGrads gc =
          ops::attention_backward(q, k.contiguous(), v.contiguous(), lengths, options, saved_c, r);
      CHECK(test::to_doubles(g.dq) == test::to_doubles(gc.dq));
      CHECK(test::to_doubles(g.dk) == test::to_doubles(gc.dk));
      CHECK(test::to_doubles(g.dv) == test::to_doubles(gc.dv));
      CHECK(g.dk.shape() == k.shape());
    }
  }
}

// ---- every storage type --------------------------------------------------------------------------

namespace {

// The gradients of out with respect to q, k and v in double, from the formula of
// kernels/attention.h and the reference's probabilities.
struct NaiveGrads {
  std::vector<double> dq, dk, dv;
};
NaiveGrads naive_attention_backward(const cpu::AttentionShape& a, const std::vector<double>& q,
                                    const std::vector<double>& k, const std::vector<double>& v,
                                    const NaiveAttention& ref, const std::vector<double>& dout, double scale,
                                    double dropout_p, std::uint64_t seed, std::uint64_t rng_stream) {
  const int64_t B = a.batch, H = a.heads, Tq = a.queries, S = a.keys, K = a.key_size, Kv = a.value_size;
  NaiveGrads g{std::vector<double>(q.size(), 0.0), std::vector<double>(k.size(), 0.0),
               std::vector<double>(v.size(), 0.0)};
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t t = 0; t < Tq; ++t) {
        const std::size_t do_t = at((b * Tq + t) * H * Kv + h * Kv), q_t = at((b * Tq + t) * H * K + h * K);
        std::vector<double> dp(at(S)), p(at(S));
        double dot_sum = 0;
        for (int64_t s = 0; s < S; ++s) {
          const std::size_t row = at(((b * H + h) * Tq + t) * S + s);
          const double mask = dropout_p <= 0 ? 1.0
                              : philox::uniform(seed, rng_stream, row) >= static_cast<float>(dropout_p)
                                  ? 1.0 / (1.0 - dropout_p)
                                  : 0.0;
          p[at(s)] = ref.probs[row];
          const std::size_t v_s = at((b * S + s) * H * Kv + h * Kv);
          for (int64_t i = 0; i < Kv; ++i) {
            dp[at(s)] += dout[do_t + at(i)] * v[v_s + at(i)];
            g.dv[v_s + at(i)] += p[at(s)] * mask * dout[do_t + at(i)];
          }
          dp[at(s)] *= mask;
          dot_sum += p[at(s)] * dp[at(s)];
        }
        for (int64_t s = 0; s < S; ++s) {
          const double ds = p[at(s)] * (dp[at(s)] - dot_sum) * scale;
          const std::size_t k_s = at((b * S + s) * H * K + h * K);
          for (int64_t i = 0; i < K; ++i) {
            g.dq[q_t + at(i)] += ds * k[k_s + at(i)];
            g.dk[k_s + at(i)] += ds * q[q_t + at(i)];
          }
        }
      }
    }
  }
  return g;
}

// Forward and backward over T for one shape; causal with the last query at the last key.
template <typename T>
void check_attention_rounding(DType dtype, int64_t Tq, int64_t S, int64_t K, bool causal) {
  using Acc = acc_t<T>;
  const int64_t B = 2, H = 2, Kv = 5;
  const double dropout = 0.2, scale = 1.0 / std::sqrt(static_cast<double>(K));
  INFO("T " << Tq << ", S " << S << ", K " << K << (causal ? ", causal" : ""));
  cpu::AttentionShape a = contiguous_shape(B, H, Tq, S, K, Kv);
  a.causal = causal;
  a.query_offset = std::max<int64_t>(S - Tq, 0);
  const std::vector<std::int32_t> lengths = {static_cast<std::int32_t>(S), static_cast<std::int32_t>(S / 2 + 1)};
  const std::vector<double> q = test::rounded_to(test::random_doubles(B * Tq * H * K, 30, 1.5), dtype),
                            k = test::rounded_to(test::random_doubles(B * S * H * K, 31, 1.5), dtype),
                            v = test::rounded_to(test::random_doubles(B * S * H * Kv, 32), dtype),
                            dout = test::rounded_to(test::random_doubles(B * Tq * H * Kv, 33), dtype);
  const std::vector<T> qt = test::to_storage<T>(q), kt = test::to_storage<T>(k), vt = test::to_storage<T>(v),
                       dot = test::to_storage<T>(dout);
  // acc_t<T>'s error relative to 1 + |result| (float: exp, log and sums over up to 1025 terms).
  const double rel = dtype == DType::kF64 ? 1e-11 : 3e-5;
  const auto check = [&](const char* what, const auto* got, const std::vector<double>& exact) {
    const test::RoundingCheck r = test::check_rounded_once(got, exact, test::one_plus_abs(exact), rel);
    INFO(what << ": " << r.bad << " bad, first " << r.first);
    CHECK(r.bad == 0);
  };

  test::GuardedBuffer<T> out(B * Tq * H * Kv);
  test::GuardedBuffer<Acc> lse(B * H * Tq);
  cpu::attention_forward<T>(a, qt.data(), kt.data(), vt.data(), lengths.data(), scale, dropout, 5, 6, lse.data(),
                            out.data());
  const NaiveAttention ref = naive_attention(a, q, k, v, lengths, scale, dropout, 5, 6);
  check("out", out.data(), ref.out);
  check("lse", lse.data(), ref.lse);

  test::GuardedBuffer<T> dq(B * Tq * H * K), dk(B * S * H * K), dv(B * S * H * Kv);
  cpu::attention_backward<T>(a, qt.data(), kt.data(), vt.data(), lengths.data(), scale, dropout, 5, 6, lse.data(),
                             dot.data(), dq.data(), dk.data(), dv.data());
  const NaiveGrads g = naive_attention_backward(a, q, k, v, ref, dout, scale, dropout, 5, 6);
  check("dq", dq.data(), g.dq);
  check("dk", dk.data(), g.dk);
  check("dv", dv.data(), g.dv);
  CHECK((out.intact() && lse.intact() && dq.intact() && dk.intact() && dv.intact()));
}

}  // namespace

DRAGOMAN_CPU_TEST_CASE("cpu attention kernels round each stored element once, for every dtype", "[kernels]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      test::with_storage_type(c.dtype, [&](auto zero) {
        using T = decltype(zero);
        for (const int64_t s : test::awkward_sizes()) {
          check_attention_rounding<T>(c.dtype, 3, s, 8, s % 2 == 1);  // key counts
          check_attention_rounding<T>(c.dtype, 2, 7, s, false);       // head sizes
        }
      });
    }
  }
}

}  // namespace dragoman
