// cuda::attention_forward/backward (kernels/cuda/attention.h) against the CPU spec for f64, f32,
// bf16 and f16: B, H, T, S, K over 1, 7, 31, 32, 33 and a 255-key case, causal and not, key
// padding (including a row with every key masked), attention dropout 0 and 0.1, and a strided
// key/value cache (k and v interleaved in one buffer, S of P rows used) read by one query at
// query_offset S - 1 (decoding). Sentinels after every output; the gaps of the strided gradients
// unchanged; a second run gives the same bits.
//
// Tolerances. The dot products and the sums over keys (out, dq) and over queries (dk, dv) run in the
// CPU's order, but exp/log are CUDA's (within 2 float ulps, not glibc's bits) and the softmax
// denominator and delta = sum_s p * dprob are summed in another (fixed) order, so each probability
// is within a few float ulps of the CPU's. Hence, with mag = the sum of the magnitudes of the
// element's terms (computed here in double from the CPU's lse):
//   out, dq, dk, dv: |got - cpu| <= 2 u_T |cpu| (one rounding of T) + r mag,
//   lse:             |got - cpu| <= r (|cpu| + 1),
// r = test::reorder_tolerance<T>() (1e-5 for float accumulation, 1e-13 for double): some 20 times
// the float order term, still far below one missing or doubled key.
// Every case runs on the naive kernels and (float, bf16, f16) on the tiled ones (attention_tiled.h),
// with extra cases of several 32-query and 64-key tiles; the 6 cases the tensor-core kernels take
// (attention_mma.h: bf16, f16, at most 64 queries and keys, K a multiple of 16) on those too, and
// every case with K a multiple of 16 on the flash ones where the device's shared memory allows
// (attention_flash.h: several 64-query and 64-key tiles, causal and padded, a key tile no query
// sees, a query offset), both with r + u_T for r (they round the
// probabilities and dscore to T before their products). Then
// ops::attention/attention_backward on GPU tensors (key_lengths on the CPU or the GPU) match the CPU ops, on both
// kernels.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/tensor.h"
#include "kernels/cpu/attention.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_flash.h"
#include "kernels/cuda/attention_mma.h"
#include "kernels/cuda/attention_tiled.h"
#include "ops/attention.h"
#include "parity_testing.h"

namespace dragoman {
namespace {

using test::as_double;
using test::DeviceBuffer;
using test::random_values;

struct Case {
  std::int64_t batch, heads, queries, keys, key_size;
  bool causal;
  double dropout;
  bool padded;                    // key_lengths below S (one row fully masked when B > 1)
  bool cache;                     // k and v interleaved in a cache of keys + 7 rows; one query at offset S - 1
  std::int64_t query_offset = 0;  // (without the cache) the first query's position among the keys
};

// The layout of one case: q, out contiguous; k and v contiguous or interleaved in one cache buffer.
cpu::AttentionShape shape_of(const Case& c) {
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

template <typename T>
void check_case(const Case& c) {
  using A = acc_t<T>;
  const cuda::Stream stream = test::test_stream();
  const cpu::AttentionShape a = shape_of(c);
  // Forced to the tiled kernels, the case must be one they take (else the naive ones would run).
  if constexpr (!std::is_same_v<T, double>) {
    if (cuda::attention_kernels() == cuda::AttentionKernels::tiled) {
      REQUIRE(cuda::attention_detail::tiled_attention_takes<T>(a));
    }
  }
  const std::int64_t B = c.batch, H = c.heads, Tq = c.queries, S = c.keys, K = c.key_size, width = H * K;
  const double scale = 1.0 / std::sqrt(static_cast<double>(K));
  const std::uint64_t seed = 1234, rng_stream = 77;
  const auto nq = static_cast<std::size_t>(B * Tq * width);
  // k and v share one buffer in the cache layout (v at column offset width); plain: two buffers.
  const auto nkv = static_cast<std::size_t>(c.cache ? B * a.k_batch_stride : B * S * width);
  const std::size_t v_offset = c.cache ? static_cast<std::size_t>(width) : 0;
  const std::vector<T> q = random_values<T>(nq, 31, -2.0, 2.0), dout = random_values<T>(nq, 32);
  const std::vector<T> k = random_values<T>(nkv, 33, -2.0, 2.0), v = random_values<T>(nkv, 34);
  const T* kp = k.data();
  const T* vp = c.cache ? k.data() + v_offset : v.data();
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(B), static_cast<std::int32_t>(S));
  if (c.padded) {
    for (std::int64_t b = 0; b < B; ++b) {
      lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>((S * (b + 1)) / (B + 1));
    }
    if (B >= 3) {
      lengths[0] = 0;                                                               // every key masked: lse 0, out 0
      lengths[static_cast<std::size_t>(B - 1)] = static_cast<std::int32_t>(S + 3);  // above S: all S keys
    }
  }
  const auto nl = static_cast<std::size_t>(B * H * Tq);

  // The CPU spec.
  std::vector<T> out(nq), dq(nq), dk(nkv, T()), dv(c.cache ? 0 : nkv, T());
  std::vector<A> lse(nl);
  cpu::attention_forward<T>(a, q.data(), kp, vp, lengths.data(), scale, c.dropout, seed, rng_stream, lse.data(),
                            out.data());
  T* dvp = c.cache ? dk.data() + v_offset : dv.data();
  cpu::attention_backward<T>(a, q.data(), kp, vp, lengths.data(), scale, c.dropout, seed, rng_stream, lse.data(),
                             dout.data(), dq.data(), dk.data(), dvp);

  // Magnitudes of each element's terms, in double from the CPU's lse.
  const double keep = 1.0 / (1.0 - c.dropout);
  std::vector<double> mag_out(nq, 0.0), mag_dq(nq, 0.0), mag_dk(nkv, 0.0), mag_dv(nkv, 0.0);
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
        std::int64_t n = std::min<std::int64_t>(lengths[static_cast<std::size_t>(b)], S);
        if (c.causal) n = std::min(n, a.query_offset + t + 1);
        const std::size_t qi = at_q(b, t, h);
        const double l = as_double(lse[static_cast<std::size_t>((b * H + h) * Tq + t)]);
        double delta = 0;
        for (std::int64_t s = 0; s < n; ++s) {
          const std::size_t ki = at_k(b, s, h);
          double dot = 0, dpa = 0;
          for (std::int64_t i = 0; i < K; ++i) {
            dot += as_double(q[qi + i]) * as_double(kp[ki + i]);
            dpa += std::fabs(as_double(dout[qi + i]) * as_double(vp[ki + i]));
          }
          p[static_cast<std::size_t>(s)] = std::exp(dot * scale - l);
          dp[static_cast<std::size_t>(s)] = keep * dpa;
          delta += p[static_cast<std::size_t>(s)] * dp[static_cast<std::size_t>(s)];
        }
        for (std::int64_t s = 0; s < n; ++s) {
          const std::size_t ki = at_k(b, s, h);
          const double ps = p[static_cast<std::size_t>(s)], ds = scale * ps * (dp[static_cast<std::size_t>(s)] + delta);
          for (std::int64_t i = 0; i < K; ++i) {
            mag_out[qi + i] += keep * ps * std::fabs(as_double(vp[ki + i]));
            mag_dq[qi + i] += ds * std::fabs(as_double(kp[ki + i]));
            mag_dk[ki + i] += ds * std::fabs(as_double(q[qi + i]));
            mag_dv[ki + v_offset + i] += keep * ps * std::fabs(as_double(dout[qi + i]));
          }
        }
      }
    }
  }
  // The tensor-core kernels round the probabilities and dscore to T before their products
  // (attention_mma.h, attention_flash.h): one more rounding of T on each term's magnitude.
  // (lse is float arithmetic in every family: r alone.)
  const cuda::AttentionKernels family = cuda::attention_kernels_for<T>(a);
  const bool mma = family == cuda::AttentionKernels::mma || family == cuda::AttentionKernels::flash;
  const double u = test::unit_roundoff<T>(), floor = test::subnormal_spacing<T>();
  const double r_lse = test::reorder_tolerance<T>(), r = r_lse + (mma ? u : 0.0);
  const auto within = [&](const std::vector<T>& ref, const std::vector<double>& mag) {
    return
        [&ref, &mag, r, u, floor](std::size_t i) { return 2 * u * std::fabs(as_double(ref[i])) + floor + r * mag[i]; };
  };

  // Forward.
  DeviceBuffer<T> gq(q), gk(k), gv(c.cache ? std::vector<T>(1) : v), gdout(dout), gout(nq);
  DeviceBuffer<std::int32_t> glengths(lengths);
  DeviceBuffer<A> glse(nl);
  const T* gkp = gk.get();
  const T* gvp = c.cache ? gk.get() + v_offset : gv.get();
  cuda::attention_forward<T>(a, gq.get(), gkp, gvp, glengths.get(), scale, c.dropout, seed, rng_stream, glse.get(),
                             gout.get(), stream);
  const std::vector<T> got_out = gout.download();
  test::check_close<T>(got_out, out, within(out, mag_out), "out");
  test::check_close<A>(
      glse.download(), lse, [&](std::size_t i) { return r_lse * (std::fabs(as_double(lse[i])) + 1); }, "lse");
  gout.check_sentinel();
  glse.check_sentinel();
  // Without lse (decoding): the same output.
  DeviceBuffer<T> gout2(nq);
  cuda::attention_forward<T>(a, gq.get(), gkp, gvp, glengths.get(), scale, c.dropout, seed, rng_stream, nullptr,
                             gout2.get(), stream);
  test::check_bits(gout2.download(), got_out, "out without lse");

  // Backward from the CPU's lse; dk/dv start as zeros, so the gaps of a strided cache stay 0.
  DeviceBuffer<A> cpu_lse(lse), workspace(static_cast<std::size_t>(cuda::attention_backward_workspace(a)));
  DeviceBuffer<T> gdq(nq), gdk(std::vector<T>(nkv, T())), gdv(std::vector<T>(c.cache ? 1 : nkv, T()));
  T* gdvp = c.cache ? gdk.get() + v_offset : gdv.get();
  cuda::attention_backward<T>(a, gq.get(), gkp, gvp, glengths.get(), scale, c.dropout, seed, rng_stream, cpu_lse.get(),
                              gdout.get(), gdq.get(), gdk.get(), gdvp, workspace.get(), stream);
  const std::vector<T> got_dq = gdq.download(), got_dk = gdk.download();
  test::check_close<T>(got_dq, dq, within(dq, mag_dq), "dq");
  if (c.cache) {
    // dk and dv interleaved: each element's magnitude is in mag_dk (keys) or mag_dv (values).
    std::vector<double> mag(nkv);
    for (std::size_t i = 0; i < nkv; ++i) mag[i] = mag_dk[i] + mag_dv[i];
    test::check_close<T>(got_dk, dk, within(dk, mag), "dk and dv (cache layout)");
  } else {
    test::check_close<T>(got_dk, dk, within(dk, mag_dk), "dk");
    test::check_close<T>(gdv.download(), dv, within(dv, mag_dv), "dv");
  }
  gdq.check_sentinel();
  gdk.check_sentinel();
  gdv.check_sentinel();
  workspace.check_sentinel();

  // Deterministic: the same bits again (forward and backward).
  cuda::attention_forward<T>(a, gq.get(), gkp, gvp, glengths.get(), scale, c.dropout, seed, rng_stream, glse.get(),
                             gout.get(), stream);
  test::check_bits(gout.download(), got_out, "out, second run");
  const std::vector<T> got_dv = gdv.download();
  cuda::attention_backward<T>(a, gq.get(), gkp, gvp, glengths.get(), scale, c.dropout, seed, rng_stream, cpu_lse.get(),
                              gdout.get(), gdq.get(), gdk.get(), gdvp, workspace.get(), stream);
  test::check_bits(gdq.download(), got_dq, "dq, second run");
  test::check_bits(gdk.download(), got_dk, "dk, second run");
  test::check_bits(gdv.download(), got_dv, "dv, second run");
}

// Restores the default choice of kernels (attention_kernels()) when a test ends, passed or not.
struct KernelsGuard {
  KernelsGuard() = default;
  KernelsGuard(const KernelsGuard&) = delete;
  KernelsGuard& operator=(const KernelsGuard&) = delete;
  ~KernelsGuard() { cuda::set_attention_kernels(cuda::AttentionKernels::automatic); }
};

}  // namespace

TEMPLATE_TEST_CASE("cuda attention equals the CPU spec within its softmax order term", "[cuda][attention]", double,
                   float, bf16, f16) {
  using T = TestType;
  // B, H, T, S, K, causal, dropout, padded, cache
  const std::vector<Case> cases = {
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
  // Every case on both implementations (double: the naive kernels only), the cases the tensor-core
  // kernels take on them too (bf16, f16), then back to the default.
  using cuda::AttentionKernels;
  std::vector<AttentionKernels> kernels = {AttentionKernels::naive};
  if (!std::is_same_v<T, double>) kernels.push_back(AttentionKernels::tiled);
  if (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
    kernels.push_back(AttentionKernels::mma);
    kernels.push_back(AttentionKernels::flash);
  }
  const KernelsGuard restore;
  for (const AttentionKernels kernel : kernels) {
    cuda::set_attention_kernels(kernel);
    std::size_t taken = 0;
    for (const Case& c : cases) {
      if (kernel == AttentionKernels::mma && !cuda::attention_detail::mma_attention_takes<T>(shape_of(c))) continue;
      if (kernel == AttentionKernels::flash && !cuda::attention_detail::flash_attention_takes<T>(shape_of(c))) continue;
      ++taken;
      INFO((kernel == AttentionKernels::tiled   ? "tiled"
            : kernel == AttentionKernels::mma   ? "mma"
            : kernel == AttentionKernels::flash ? "flash"
                                                : "naive")
           << " kernels: B " << c.batch << ", H " << c.heads << ", T " << c.queries << ", S " << c.keys << ", K "
           << c.key_size << (c.causal ? ", causal" : "") << ", dropout " << c.dropout << (c.padded ? ", padded" : "")
           << (c.cache ? ", strided cache" : "") << ", query offset " << shape_of(c).query_offset);
      check_case<T>(c);
    }
    // On a GPU that has them (sm_80 and later), the tensor-core kernels took 6 of the cases; 5 where a
    // block has at most 99 KiB of shared memory (sm_86, sm_89, sm_120), too little for case 6's
    // backward pass (33 queries and keys, K 128: 106 KiB).
    if (kernel == AttentionKernels::mma && cuda::attention_detail::mma_attention_takes<T>(shape_of(cases[2])))
      CHECK(taken == (cuda::attention_detail::mma_attention_takes<T>(shape_of(cases[6])) ? 6u : 5u));
    // The flash kernels take every case with K a multiple of 16 whose blocks fit the device's shared
    // memory: all 15 on an H100 or A100; 12 on sm_86/89/120 (99 KiB: not K 96 or 128).
    if (kernel == AttentionKernels::flash && cuda::attention_detail::flash_attention_takes<T>(shape_of(cases[2]))) {
      int optin = 0;
      DRAGOMAN_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
      std::size_t fitting = 0;
      for (const Case& c : cases) {
        fitting += c.key_size % 16 == 0 && cuda::attention_detail::flash_attention_shared_bytes(
                                               c.key_size, c.key_size) <= static_cast<std::size_t>(optin);
      }
      CHECK(fitting >= 12);
      CHECK(taken == fitting);
    }
  }
}

TEST_CASE("attention ops on GPU tensors match the CPU ops", "[cuda][attention][ops]") {
  const Device gpu = Device::cuda(0);
  const KernelsGuard restore;
  for (const auto kernels : {cuda::AttentionKernels::tiled, cuda::AttentionKernels::naive}) {
    cuda::set_attention_kernels(kernels);
    for (const DType dtype : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16}) {
      INFO(dtype_name(dtype) << (kernels == cuda::AttentionKernels::naive ? ", naive kernels" : ", tiled kernels"));
      // B 2, T 9, S 11, H 3, K 8, causal with padding and dropout; k and v read through a cache view.
      const Tensor q = Tensor::from_vector(random_values<float>(2 * 9 * 24, 41), {2, 9, 24}).to(dtype);
      const Tensor cache = Tensor::from_vector(random_values<float>(2 * 16 * 48, 42), {2, 16, 48}).to(dtype);
      const Tensor gcache = cache.to(gpu);
      const Tensor k = cache.narrow(1, 0, 11).narrow(2, 0, 24), v = cache.narrow(1, 0, 11).narrow(2, 24, 24);
      const Tensor gk = gcache.narrow(1, 0, 11).narrow(2, 0, 24), gv = gcache.narrow(1, 0, 11).narrow(2, 24, 24);
      const Tensor dout = Tensor::from_vector(random_values<float>(2 * 9 * 24, 43), {2, 9, 24}).to(dtype);
      const Tensor lengths = Tensor::from_vector(std::vector<std::int32_t>{11, 6}, {2});
      ops::AttentionOptions o;
      o.heads = 3;
      o.causal = true;
      o.query_offset = 2;
      o.dropout = 0.1;
      o.seed = 5;
      o.rng_stream = 9;
      // key_lengths on the CPU for the forward pass, on the GPU (as the model keeps them) for the backward.
      ops::AttentionSaved saved, gsaved;
      const Tensor out = ops::attention(q, k, v, lengths, o, &saved);
      const Tensor gout = ops::attention(q.to(gpu), gk, gv, lengths, o, &gsaved);
      CHECK(gout.device() == gpu);
      CHECK(gsaved.lse.dtype() == accumulator_dtype(dtype));
      const ops::AttentionGrads g = ops::attention_backward(q, k, v, lengths, o, saved, dout);
      const ops::AttentionGrads gg =
          ops::attention_backward(q.to(gpu), gk, gv, lengths.to(gpu), o, gsaved, dout.to(gpu));
      const double tol = dtype == DType::kF64   ? 1e-12
                         : dtype == DType::kF32 ? 1e-5
                         : dtype == DType::kF16 ? 4e-3
                                                : 3e-2;
      const auto close = [&](const Tensor& got, const Tensor& expected, const char* what) {
        INFO(what);
        const std::vector<double> e = expected.to(DType::kF64).to_vector<double>();
        const std::vector<double> r = got.to(Device::cpu()).to(DType::kF64).to_vector<double>();
        REQUIRE(r.size() == e.size());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < e.size(); ++i) bad += !(std::fabs(r[i] - e[i]) <= tol * 4 * (1 + std::fabs(e[i])));
        CHECK(bad == 0);
      };
      close(gout, out, "out");
      close(gsaved.lse, saved.lse, "lse");
      close(gg.dq, g.dq, "dq");
      close(gg.dk, g.dk, "dk");
      close(gg.dv, g.dv, "dv");
    }
  }
}

}  // namespace dragoman
