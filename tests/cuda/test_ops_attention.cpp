// cuda::attention_forward/backward (kernels/attention.h) against the CPU spec for f64, f32,
// bf16 and f16 on the cases of tests/kernels/attention_cases.h (which also states the tolerances):
// sentinels after every output; the gaps of the strided gradients unchanged; a second run gives the
// same bits.
// Every case runs on the naive kernels and (float, bf16, f16) on the tiled ones (attention_tiled.h),
// with extra cases of several 32-query and 64-key tiles; the 6 cases the tensor-core kernels take
// (attention_mma.h: bf16, f16, at most 64 queries and keys, K a multiple of 16) on those too, and
// every case with K a multiple of 16 on the flash ones where the device's shared memory allows
// (attention_flash.h: several 64-query and 64-key tiles, causal and padded, a key tile no query
// sees, a query offset), both with the tensor cores' tolerance. Then ops::attention/attention_backward
// on GPU tensors (key_lengths on the CPU or the GPU) match the CPU ops, on both kernels.
// (tests/kernels/test_attention_emulated.cpp runs the tensor-core kernels' source on the CPU.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/tensor.h"
#include "kernels/attention.h"
#include "kernels/attention_cases.h"
#include "kernels/cuda/attention_flash.h"
#include "kernels/cuda/attention_mma.h"
#include "kernels/cuda/attention_tiled.h"
#include "ops/attention.h"
#include "parity_testing.h"

namespace dragoman {
namespace {

using test::as_double;
using test::AttentionCase;
using test::DeviceBuffer;
using test::random_values;
using test::shape_of;

template <typename T>
void check_case(const AttentionCase& c) {
  using A = acc_t<T>;
  const cuda::Stream stream = test::test_stream();
  const cpu::AttentionShape a = shape_of(c);
  // Forced to the tiled kernels, the case must be one they take (else the naive ones would run).
  if constexpr (!std::is_same_v<T, double>) {
    if (cuda::attention_kernels() == cuda::AttentionKernels::tiled) {
      REQUIRE(cuda::attention_detail::tiled_attention_takes<T>(a));
    }
  }
  const test::AttentionReference<T> ref = test::attention_reference<T>(c);
  const std::size_t nq = ref.q.size(), nkv = ref.k.size(), nl = ref.lse.size(), v_offset = ref.v_offset;
  const double scale = ref.scale;
  const std::uint64_t seed = ref.seed, rng_stream = ref.rng_stream;
  const cuda::AttentionKernels family = cuda::attention_kernels_for<T>(a);
  const bool tensor_cores = family == cuda::AttentionKernels::mma || family == cuda::AttentionKernels::flash;
  const auto within = [&](const std::vector<T>& expected, const std::vector<double>& mag) {
    return test::attention_tolerance<T>(expected, mag, tensor_cores);
  };

  // Forward.
  DeviceBuffer<T> gq(ref.q), gk(ref.k), gv(c.cache ? std::vector<T>(1) : ref.v), gdout(ref.dout), gout(nq);
  DeviceBuffer<std::int32_t> glengths(ref.lengths);
  DeviceBuffer<A> glse(nl);
  const T* gkp = gk.get();
  const T* gvp = c.cache ? gk.get() + v_offset : gv.get();
  cuda::attention_forward<T>(a, gq.get(), gkp, gvp, glengths.get(), scale, c.dropout, seed, rng_stream, glse.get(),
                             gout.get(), stream);
  const std::vector<T> got_out = gout.download();
  test::check_close<T>(got_out, ref.out, within(ref.out, ref.mag_out), "out");
  test::check_close<A>(glse.download(), ref.lse, test::lse_tolerance<T>(ref.lse), "lse");
  gout.check_sentinel();
  glse.check_sentinel();
  // Without lse (decoding): the same output.
  DeviceBuffer<T> gout2(nq);
  cuda::attention_forward<T>(a, gq.get(), gkp, gvp, glengths.get(), scale, c.dropout, seed, rng_stream, nullptr,
                             gout2.get(), stream);
  test::check_bits(gout2.download(), got_out, "out without lse");

  // Backward from the CPU's lse; dk/dv start as zeros, so the gaps of a strided cache stay 0.
  DeviceBuffer<A> cpu_lse(ref.lse), workspace(static_cast<std::size_t>(cuda::attention_backward_workspace(a)));
  DeviceBuffer<T> gdq(nq), gdk(std::vector<T>(nkv, T())), gdv(std::vector<T>(c.cache ? 1 : nkv, T()));
  T* gdvp = c.cache ? gdk.get() + v_offset : gdv.get();
  cuda::attention_backward<T>(a, gq.get(), gkp, gvp, glengths.get(), scale, c.dropout, seed, rng_stream, cpu_lse.get(),
                              gdout.get(), gdq.get(), gdk.get(), gdvp, workspace.get(), stream);
  const std::vector<T> got_dq = gdq.download(), got_dk = gdk.download();
  test::check_close<T>(got_dq, ref.dq, within(ref.dq, ref.mag_dq), "dq");
  const std::vector<double> mag_dk = test::dk_buffer_magnitudes(ref);
  test::check_close<T>(got_dk, ref.dk, within(ref.dk, mag_dk), c.cache ? "dk and dv (cache layout)" : "dk");
  if (!c.cache) test::check_close<T>(gdv.download(), ref.dv, within(ref.dv, ref.mag_dv), "dv");
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
  const std::vector<AttentionCase>& cases = test::attention_cases();
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
    for (const AttentionCase& c : cases) {
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
      for (const AttentionCase& c : cases) {
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
