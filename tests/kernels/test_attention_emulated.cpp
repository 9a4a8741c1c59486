// The tensor-core attention kernels' own source (kernels/cuda/attention_flash.cu and
// attention_mma.cu) run on the CPU through the host emulation of tests/emulated_cuda/ (a block's
// threads as std::threads with real barriers and shuffles, WMMA's tiles as float loops, checked for
// the hardware's alignment and leading-dimension rules, for every lane of a warp making each call
// and for staying inside the block's shared memory, which starts as NaN), against the CPU spec with
// the tensor cores' tolerance (attention_cases.h): out, lse, dq, dk, dv, and the rows outside the
// outputs untouched. This is what can be checked without a GPU: the logic, the barriers, the
// indices, the masks and the dropout's indexing. tests/cuda/test_ops_attention.cpp checks the same
// kernels on a GPU, with out without lse and a second run's bits besides (the emulation's sums run
// in program order, so its reruns prove nothing). The emulation is slow (a block's 128 threads meet
// at every barrier on two cores), so its cases have few heads: the one-block kernels' six of
// attention_cases.h, and for the flash kernels smaller versions of that file's cases of several
// tiles, in bf16 (one case of each family in f16).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/numeric.h"
#include "emulated_cuda/emulated_cuda_control.h"
#include "kernels/attention_cases.h"
#include "kernels/comparisons.h"
#define attention_detail attention_detail_emulated
#include "kernels/cuda/attention_flash.h"
#include "kernels/cuda/attention_mma.h"
#undef attention_detail

namespace dragoman {
namespace {

namespace emulated = cuda::attention_detail_emulated;
using test::AttentionCase;

enum class Family { one_block, flash };

template <typename T>
void forward(Family family, const cpu::AttentionShape& a, const test::AttentionReference<T>& r, float* lse, T* out) {
  const auto run = family == Family::flash ? emulated::flash_attention_forward<T> : emulated::mma_attention_forward<T>;
  run(a, r.q.data(), r.k_data(), r.v_data(), r.lengths.data(), r.scale, r.dropout, r.seed, r.rng_stream, lse, out,
      nullptr);
}

// dq, dk and dv (dv inside dk's buffer in the cache layout): the outputs start as `start`.
template <typename T>
struct Gradients {
  std::vector<T> dq, dk, dv;
  std::vector<float> delta;
};
template <typename T>
Gradients<T> backward(Family family, const cpu::AttentionShape& a, const test::AttentionReference<T>& r, T start) {
  Gradients<T> g{std::vector<T>(r.dq.size(), start), std::vector<T>(r.dk.size(), T()), std::vector<T>(r.dv.size(), T()),
                 std::vector<float>(r.lse.size(), -1.f)};
  T* dv = r.v.empty() ? g.dk.data() + r.v_offset : g.dv.data();
  if (family == Family::flash) {
    emulated::flash_attention_backward<T>(a, r.q.data(), r.k_data(), r.v_data(), r.lengths.data(), r.scale, r.dropout,
                                          r.seed, r.rng_stream, r.lse.data(), r.dout.data(), g.dq.data(), g.dk.data(),
                                          dv, g.delta.data(), nullptr);
  } else {
    emulated::mma_attention_backward<T>(a, r.q.data(), r.k_data(), r.v_data(), r.lengths.data(), r.scale, r.dropout,
                                        r.seed, r.rng_stream, r.lse.data(), r.dout.data(), g.dq.data(), g.dk.data(), dv,
                                        nullptr);
  }
  return g;
}

template <typename T>
void check_emulated(Family family, const AttentionCase& c) {
  const cpu::AttentionShape a = test::shape_of(c);
  const test::AttentionReference<T> r = test::attention_reference<T>(c);
  const auto within = [](const std::vector<T>& expected, const std::vector<double>& mag) {
    return test::attention_tolerance<T>(expected, mag, true);
  };
  // Forward: out and lse start as NaN, so an element left unwritten fails.
  const T nan = store<T>(NAN);
  std::vector<T> out(r.out.size(), nan);
  std::vector<float> lse(r.lse.size(), NAN);
  forward<T>(family, a, r, lse.data(), out.data());
  test::check_close<T>(out, r.out, within(r.out, r.mag_out), "out");
  test::check_close<float>(lse, r.lse, test::lse_tolerance<T>(r.lse), "lse");

  // Backward from the CPU's lse: dq starts as NaN; dk/dv as zeros (the gaps of a strided cache stay 0).
  const Gradients<T> g = backward<T>(family, a, r, nan);
  test::check_close<T>(g.dq, r.dq, within(r.dq, r.mag_dq), "dq");
  const std::vector<double> mag_dk = test::dk_buffer_magnitudes(r);
  test::check_close<T>(g.dk, r.dk, within(r.dk, mag_dk), c.cache ? "dk and dv (cache layout)" : "dk");
  if (!c.cache) test::check_close<T>(g.dv, r.dv, within(r.dv, r.mag_dv), "dv");
}

std::string describe(const AttentionCase& c) {
  return "B " + std::to_string(c.batch) + ", H " + std::to_string(c.heads) + ", T " + std::to_string(c.queries) +
         ", S " + std::to_string(c.keys) + ", K " + std::to_string(c.key_size) + (c.causal ? ", causal" : "") +
         (c.dropout > 0 ? ", dropout" : "") + (c.padded ? ", padded" : "") + (c.cache ? ", strided cache" : "") +
         ", query offset " + std::to_string(test::shape_of(c).query_offset);
}

}  // namespace

TEST_CASE("the one-block tensor-core attention kernels' source, emulated on the CPU, meets the CPU spec",
          "[kernels][attention][emulated]") {
  std::size_t taken = 0;
  for (const AttentionCase& c : test::attention_cases()) {
    if (!emulated::mma_attention_takes<bf16>(test::shape_of(c))) continue;
    ++taken;
    INFO(describe(c));
    check_emulated<bf16>(Family::one_block, c);
  }
  CHECK(taken == 6);  // as on an H100 (test_ops_attention.cpp)
  INFO("f16: " << describe(test::attention_cases()[14]));
  check_emulated<f16>(Family::one_block, test::attention_cases()[14]);
}

TEST_CASE("the flash tensor-core attention kernels' source, emulated on the CPU, meets the CPU spec",
          "[kernels][attention][emulated]") {
  // B, H, T, S, K, causal, dropout, padded, cache[, query offset]: one query over a strided cache;
  // T > S within one key tile; causal self-attention of 150 tokens (3 x 3 tiles); a row of no keys
  // (length 0), a key tile no query sees (length 100 of 200) and one of all keys; K 128 over three
  // key tiles; causal queries at offset 43 (dk/dv's first query tile off a tile boundary).
  const std::vector<AttentionCase> cases = {
      {3, 2, 1, 33, 32, true, 0.0, true, true},       {2, 1, 100, 40, 16, false, 0.1, false, false},
      {1, 1, 150, 150, 64, true, 0.1, false, false},  {3, 1, 130, 200, 32, false, 0.0, true, false},
      {1, 1, 80, 160, 128, false, 0.1, false, false}, {1, 1, 100, 143, 32, true, 0.1, false, false, 43},
  };
  for (const AttentionCase& c : cases) {
    INFO("bf16: " << describe(c));
    REQUIRE(emulated::flash_attention_takes<bf16>(test::shape_of(c)));
    check_emulated<bf16>(Family::flash, c);
  }
  const AttentionCase f16_case{2, 1, 70, 130, 64, true, 0.1, true, false};
  INFO("f16: " << describe(f16_case));
  check_emulated<f16>(Family::flash, f16_case);
}

TEST_CASE("the tensor-core attention kernels take the shapes their blocks' shared memory allows",
          "[kernels][attention][emulated]") {
  const auto shape = [](std::int64_t queries, std::int64_t keys, std::int64_t size) {
    return test::shape_of(AttentionCase{2, 2, queries, keys, size, false, 0.0, false, false});
  };
  // bf16 and f16 only, head sizes multiples of 16 up to 128.
  CHECK(emulated::flash_attention_takes<bf16>(shape(300, 500, 64)));
  CHECK(emulated::flash_attention_takes<f16>(shape(1, 1, 16)));
  CHECK_FALSE(emulated::flash_attention_takes<float>(shape(100, 100, 64)));
  CHECK_FALSE(emulated::flash_attention_takes<bf16>(shape(100, 100, 40)));
  CHECK_FALSE(emulated::flash_attention_takes<bf16>(shape(100, 100, 144)));
  CHECK_FALSE(emulated::mma_attention_takes<bf16>(shape(65, 64, 64)));
  CHECK(emulated::mma_attention_takes<bf16>(shape(64, 64, 64)));
  // The largest block (dq, 144.5 KiB at K 128; 96.5 KiB at 64): on a device of 99 KiB a block
  // (sm_86, sm_89, sm_120) K 64 fits and 96 and 128 do not; on an A100's 163 KiB all do.
  CHECK(emulated::flash_attention_shared_bytes(64, 64) == 98816);
  CHECK(emulated::flash_attention_shared_bytes(128, 128) == 147968);
  emulation::set_shared_limit(99 * 1024);
  CHECK(emulated::flash_attention_takes<bf16>(shape(200, 200, 64)));
  CHECK_FALSE(emulated::flash_attention_takes<bf16>(shape(200, 200, 96)));
  CHECK_FALSE(emulated::flash_attention_takes<bf16>(shape(200, 200, 128)));
  emulation::set_shared_limit(163 * 1024);
  CHECK(emulated::flash_attention_takes<bf16>(shape(200, 200, 128)));
  emulation::set_shared_limit(227 * 1024);
}

}  // namespace dragoman
