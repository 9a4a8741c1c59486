// The tensor-core attention kernels' source under the host emulation, built with ThreadSanitizer by
// scripts/race-check-emulated.sh: forward and backward passes of both families on shapes that walk
// every code path (several tiles, causal at a query offset, a row of no keys and a key tile no query
// sees, one query over a strided cache, K 128), so that a missing barrier between threads of a block
// shows as a data race (the emulation meets at real barriers; TSan reports what they do not order).
// Results are not checked here (tests/kernels/test_attention_emulated.cpp does that).
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "base/numeric.h"
#include "kernels/attention.h"
#define attention_detail attention_detail_emulated
#include "kernels/cuda/attention_flash.h"
#include "kernels/cuda/attention_mma.h"
#undef attention_detail

namespace {

using dragoman::bf16;
using dragoman::cpu::AttentionShape;
namespace emulated = dragoman::cuda::attention_detail_emulated;

struct Shape {
  std::int64_t batch, queries, keys, size, query_offset;
  bool causal, cache;
};

void run(const Shape& c, bool flash) {
  AttentionShape a;
  a.batch = c.batch;
  a.heads = 1;
  a.queries = c.queries;
  a.keys = c.keys;
  a.key_size = a.value_size = c.size;
  a.q_row_stride = a.out_row_stride = c.size;
  a.q_batch_stride = a.out_batch_stride = c.queries * c.size;
  // A cache: k and v interleaved in rows of 2 K, 7 rows to spare.
  a.k_row_stride = a.v_row_stride = c.cache ? 2 * c.size : c.size;
  a.k_batch_stride = a.v_batch_stride = (c.cache ? c.keys + 7 : c.keys) * a.k_row_stride;
  a.causal = c.causal;
  a.query_offset = c.query_offset;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  const auto values = [&](std::int64_t n) {
    std::vector<bf16> v(static_cast<std::size_t>(n));
    for (bf16& x : v) x = dragoman::store<bf16>(uniform(rng));
    return v;
  };
  const std::int64_t nq = c.batch * a.q_batch_stride, nkv = c.batch * a.k_batch_stride;
  const std::vector<bf16> q = values(nq), dout = values(nq), kv = values(nkv + c.size), v = values(nkv);
  const bf16* vp = c.cache ? kv.data() + c.size : v.data();
  // Lengths 0 (no keys), half the keys, all of them (and above: the kernels clamp to S).
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(c.batch));
  for (std::int64_t b = 0; b < c.batch; ++b)
    lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(b * c.keys / 2 + b);
  std::vector<bf16> out(static_cast<std::size_t>(nq)), dq(out.size()), dk(static_cast<std::size_t>(nkv + c.size)),
      dv(static_cast<std::size_t>(nkv));
  std::vector<float> lse(static_cast<std::size_t>(c.batch * c.queries)), delta(lse.size());
  bf16* dvp = c.cache ? dk.data() + c.size : dv.data();
  if (flash) {
    emulated::flash_attention_forward<bf16>(a, q.data(), kv.data(), vp, lengths.data(), 0.2, 0.1, 1, 2, lse.data(),
                                            out.data(), nullptr);
    emulated::flash_attention_backward<bf16>(a, q.data(), kv.data(), vp, lengths.data(), 0.2, 0.1, 1, 2, lse.data(),
                                             dout.data(), dq.data(), dk.data(), dvp, delta.data(), nullptr);
  } else {
    emulated::mma_attention_forward<bf16>(a, q.data(), kv.data(), vp, lengths.data(), 0.2, 0.1, 1, 2, lse.data(),
                                          out.data(), nullptr);
    emulated::mma_attention_backward<bf16>(a, q.data(), kv.data(), vp, lengths.data(), 0.2, 0.1, 1, 2, lse.data(),
                                           dout.data(), dq.data(), dk.data(), dvp, nullptr);
  }
}

}  // namespace

int main() {
  // batch, queries, keys, K, query offset, causal, cache
  run({3, 100, 143, 32, 43, true, false}, true);
  run({3, 130, 200, 64, 0, false, false}, true);
  run({2, 1, 150, 128, 149, true, true}, true);
  run({3, 40, 40, 64, 0, true, false}, false);
  run({2, 1, 33, 32, 32, true, true}, false);
  std::printf("race check: the flash and one-block tensor-core attention kernels ran under the emulation\n");
  return 0;
}
