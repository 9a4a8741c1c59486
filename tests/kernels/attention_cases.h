// The attention parity cases and their reference, shared by the CUDA parity test
// (tests/cuda/test_ops_attention.cpp, on a GPU) and the host emulation of the tensor-core kernels
// (tests/kernels/test_attention_emulated.cpp, on the CPU): the shapes (B, H, T, S, K over 1, 7, 31,
// 32, 33 and 255 keys, several 64-row tiles, causal and not, key padding with a fully masked row,
// attention dropout 0 and 0.1, a strided key/value cache read by one query at query_offset S - 1,
// a query offset), random inputs, the CPU spec's outputs and each output element's magnitude of
// terms, and the tolerance a family of kernels is held to.
//
// Tolerances. The dot products and the sums over keys (out, dq) and over queries (dk, dv) run in the
// CPU's order, but exp/log are CUDA's (within 2 float ulps, not glibc's bits) and the softmax
// denominator and delta = sum_s p * dprob are summed in another (fixed) order, so each probability
// is within a few float ulps of the CPU's. Hence, with mag = the sum of the magnitudes of the
// element's terms (computed here in double from the CPU's lse):
//   out, dq, dk, dv: |got - cpu| <= 2 u_T |cpu| (one rounding of T) + s_T + r mag,
//   lse:             |got - cpu| <= r (|cpu| + 1),
// r = test::reorder_tolerance<T>() (1e-5 for float accumulation, 1e-13 for double): some 20 times
// the float order term, still far below one missing or doubled key; s_T the subnormal spacing. The
// tensor-core kernels (attention_mma.h, attention_flash.h) round the probabilities and dscore to T
// before their products: r + u_T for r on out, dq, dk and dv.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/numeric.h"
#include "kernels/attention.h"
#include "kernels/comparisons.h"

namespace dragoman::test {

struct AttentionCase {
  std::int64_t batch, heads, queries, keys, key_size;
  bool causal;
  double dropout;
  bool padded;                    // key_lengths below S (one row fully masked when B > 2)
  bool cache;                     // k and v interleaved in a cache of keys + 7 rows; one query at offset S - 1
  std::int64_t query_offset = 0;  // (without the cache) the first query's position among the keys
};

// B, H, T, S, K, causal, dropout, padded, cache[, query offset]
inline const std::vector<AttentionCase>& attention_cases() {
  static const std::vector<AttentionCase> cases = {
      {1, 1, 1, 1, 1, false, 0.0, false, false},
      {2, 3, 7, 7, 7, true, 0.0, false, false},
      {3, 2, 31, 33, 32, false, 0.1, true, false},
      {2, 1, 33, 32, 33, true, 0.1, true, false},
      {2, 2, 32, 31, 64, true, 0.0, true, false},
      {2, 2, 5, 255, 64, false, 0.1, true, false},
      {1, 4, 33, 33, 128, true, 0.1, false, false},
      {3, 2, 1, 33, 32, true, 0.0, true, true},
      {2, 3, 1, 255, 64, true, 0.1, false, true},
      {1, 1, 1, 1, 7, true, 0.0, false, true},
      // Several tiles of 32 queries and 64 keys (the tiled kernels), K not a multiple of 16, T > S.
      {2, 3, 70, 130, 64, true, 0.1, true, false},
      {1, 2, 65, 200, 96, false, 0.0, true, false},
      {2, 2, 100, 40, 16, false, 0.1, false, false},
      {3, 1, 97, 97, 5, true, 0.1, true, false},
      // A whole 64 x 64 tile and odd counts with K 48 (the tensor-core kernels take these too).
      {4, 2, 64, 64, 16, true, 0.1, true, false},
      {2, 2, 17, 50, 48, false, 0.0, true, false},
      // Several 64-query and 64-key tiles of the flash kernels: causal self-attention of 150 tokens;
      // 130 queries over 200 keys with a row of no keys (length 0), one of 100 keys (a key tile no
      // query sees: dk, dv zeros) and one of all; K 128 over 3 key tiles; 100 causal queries at
      // offset 43 among 143 keys (the dk/dv kernels' first query tile starts off a tile boundary).
      {2, 2, 150, 150, 64, true, 0.1, true, false},
      {3, 2, 130, 200, 32, false, 0.0, true, false},
      {1, 2, 80, 160, 128, false, 0.1, false, false},
      {2, 1, 100, 143, 32, true, 0.1, false, false, 43},
  };
  return cases;
}

// The layout of one case: q, out contiguous; k and v contiguous or interleaved in one cache buffer.
inline cpu::AttentionShape shape_of(const AttentionCase& c) {
  cpu::AttentionShape a;
  a.batch = c.batch;
  a.heads = c.heads;
  a.queries = c.queries;
  a.keys = c.keys;
  a.key_size = c.key_size;
  a.value_size = c.key_size;
  const std::int64_t width = c.heads * c.key_size;
  a.q_batch_stride = a.out_batch_stride = c.queries * width;
  a.q_row_stride = a.out_row_stride = width;
  if (c.cache) {
    const std::int64_t capacity = c.keys + 7;
    a.k_batch_stride = a.v_batch_stride = capacity * 2 * width;
    a.k_row_stride = a.v_row_stride = 2 * width;
  } else {
    a.k_batch_stride = a.v_batch_stride = c.keys * width;
    a.k_row_stride = a.v_row_stride = width;
  }
  a.causal = c.causal;
  a.query_offset = c.cache ? c.keys - 1 : c.query_offset;
  return a;
}

// One case's inputs, the CPU spec's outputs and each output element's magnitude of terms.
template <typename T>
struct AttentionReference {
  cpu::AttentionShape shape;
  double scale = 1, dropout = 0;
  std::uint64_t seed = 1234, rng_stream = 77;
  // Inputs: q and dout [B, T, H K]; k and v [B, S, H K], or one cache buffer (v at column offset
  // v_offset, the buffer `v` then unused); key lengths [B].
  std::vector<T> q, dout, k, v;
  std::vector<std::int32_t> lengths;
  std::size_t v_offset = 0;
  // The CPU spec: out, lse, and dq, dk, dv (dv within dk's buffer in the cache layout).
  std::vector<T> out, dq, dk, dv;
  std::vector<acc_t<T>> lse;
  std::vector<double> mag_out, mag_dq, mag_dk, mag_dv;  // of the buffers' elements (mag_dk/dv: of k's)

  const T* k_data() const { return k.data(); }
  const T* v_data() const { return v.empty() ? k.data() + v_offset : v.data(); }
};

template <typename T>
AttentionReference<T> attention_reference(const AttentionCase& c) {
  AttentionReference<T> r;
  const cpu::AttentionShape a = shape_of(c);
  r.shape = a;
  r.dropout = c.dropout;
  const std::int64_t B = c.batch, H = c.heads, Tq = c.queries, S = c.keys, K = c.key_size, width = H * K;
  r.scale = 1.0 / std::sqrt(static_cast<double>(K));
  const auto nq = static_cast<std::size_t>(B * Tq * width);
  // k and v share one buffer in the cache layout (v at column offset width); plain: two buffers.
  const auto nkv = static_cast<std::size_t>(c.cache ? B * a.k_batch_stride : B * S * width);
  r.v_offset = c.cache ? static_cast<std::size_t>(width) : 0;
  r.q = random_values<T>(nq, 31, -2.0, 2.0);
  r.dout = random_values<T>(nq, 32);
  r.k = random_values<T>(nkv, 33, -2.0, 2.0);
  r.v = c.cache ? std::vector<T>() : random_values<T>(nkv, 34);
  const T* kp = r.k.data();
  const T* vp = c.cache ? r.k.data() + r.v_offset : r.v.data();
  r.lengths.assign(static_cast<std::size_t>(B), static_cast<std::int32_t>(S));
  if (c.padded) {
    for (std::int64_t b = 0; b < B; ++b) {
      r.lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>((S * (b + 1)) / (B + 1));
    }
    if (B >= 3) {
      r.lengths[0] = 0;                                                               // every key masked: lse 0, out 0
      r.lengths[static_cast<std::size_t>(B - 1)] = static_cast<std::int32_t>(S + 3);  // above S: all S keys
    }
  }
  const auto nl = static_cast<std::size_t>(B * H * Tq);

  // The CPU spec.
  r.out.assign(nq, T());
  r.dq.assign(nq, T());
  r.dk.assign(nkv, T());
  r.dv.assign(c.cache ? 0 : nkv, T());
  r.lse.assign(nl, acc_t<T>());
  cpu::attention_forward<T>(a, r.q.data(), kp, vp, r.lengths.data(), r.scale, c.dropout, r.seed, r.rng_stream,
                            r.lse.data(), r.out.data());
  T* dvp = c.cache ? r.dk.data() + r.v_offset : r.dv.data();
  cpu::attention_backward<T>(a, r.q.data(), kp, vp, r.lengths.data(), r.scale, c.dropout, r.seed, r.rng_stream,
                             r.lse.data(), r.dout.data(), r.dq.data(), r.dk.data(), dvp);

  // Magnitudes of each element's terms, in double from the CPU's lse.
  const double keep = 1.0 / (1.0 - c.dropout);
  r.mag_out.assign(nq, 0.0);
  r.mag_dq.assign(nq, 0.0);
  r.mag_dk.assign(nkv, 0.0);
  r.mag_dv.assign(nkv, 0.0);
  const auto at_q = [&](std::int64_t b, std::int64_t t, std::int64_t h) {
    return static_cast<std::size_t>(b * a.q_batch_stride + t * a.q_row_stride + h * K);
  };
  const auto at_k = [&](std::int64_t b, std::int64_t s, std::int64_t h) {
    return static_cast<std::size_t>(b * a.k_batch_stride + s * a.k_row_stride + h * K);
  };
  std::vector<double> p(static_cast<std::size_t>(S)), dp(static_cast<std::size_t>(S));
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < H; ++h) {
      for (std::int64_t t = 0; t < Tq; ++t) {
        std::int64_t n = std::min<std::int64_t>(r.lengths[static_cast<std::size_t>(b)], S);
        if (c.causal) n = std::min(n, a.query_offset + t + 1);
        const std::size_t qi = at_q(b, t, h);
        const double l = as_double(r.lse[static_cast<std::size_t>((b * H + h) * Tq + t)]);
        double delta = 0;
        for (std::int64_t s = 0; s < n; ++s) {
          const std::size_t ki = at_k(b, s, h);
          double dot = 0, dpa = 0;
          for (std::int64_t i = 0; i < K; ++i) {
            dot += as_double(r.q[qi + i]) * as_double(kp[ki + i]);
            dpa += std::fabs(as_double(r.dout[qi + i]) * as_double(vp[ki + i]));
          }
          p[static_cast<std::size_t>(s)] = std::exp(dot * r.scale - l);
          dp[static_cast<std::size_t>(s)] = keep * dpa;
          delta += p[static_cast<std::size_t>(s)] * dp[static_cast<std::size_t>(s)];
        }
        for (std::int64_t s = 0; s < n; ++s) {
          const std::size_t ki = at_k(b, s, h);
          const double ps = p[static_cast<std::size_t>(s)],
                       ds = r.scale * ps * (dp[static_cast<std::size_t>(s)] + delta);
          for (std::int64_t i = 0; i < K; ++i) {
            r.mag_out[qi + i] += keep * ps * std::fabs(as_double(vp[ki + i]));
            r.mag_dq[qi + i] += ds * std::fabs(as_double(kp[ki + i]));
            r.mag_dk[ki + i] += ds * std::fabs(as_double(r.q[qi + i]));
            r.mag_dv[ki + r.v_offset + i] += keep * ps * std::fabs(as_double(r.dout[qi + i]));
          }
        }
      }
    }
  }
  return r;
}

// The tolerance of element i of an output whose CPU spec is `ref` (mag: its magnitudes of terms),
// for the kernels that round the probabilities and dscore to T (tensor_cores) or not.
template <typename T>
std::function<double(std::size_t)> attention_tolerance(const std::vector<T>& ref, const std::vector<double>& mag,
                                                       bool tensor_cores) {
  const double u = unit_roundoff<T>(), floor = subnormal_spacing<T>();
  const double r = reorder_tolerance<T>() + (tensor_cores ? u : 0.0);
  return [&ref, &mag, r, u, floor](std::size_t i) { return 2 * u * std::fabs(as_double(ref[i])) + floor + r * mag[i]; };
}

// lse (float arithmetic in every family): r (|cpu| + 1).
template <typename T>
std::function<double(std::size_t)> lse_tolerance(const std::vector<acc_t<T>>& lse) {
  const double r = reorder_tolerance<T>();
  return [&lse, r](std::size_t i) { return r * (std::fabs(as_double(lse[i])) + 1); };
}

// The magnitudes of dk's buffer: in the cache layout it holds dv too (each element's in mag_dk or
// mag_dv), else dk's alone.
template <typename T>
std::vector<double> dk_buffer_magnitudes(const AttentionReference<T>& r) {
  if (r.v_offset == 0) return r.mag_dk;
  std::vector<double> mag(r.mag_dk.size());
  for (std::size_t i = 0; i < mag.size(); ++i) mag[i] = r.mag_dk[i] + r.mag_dv[i];
  return mag;
}

}  // namespace dragoman::test
