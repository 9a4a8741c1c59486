// The one-pass top-k of kernels/cuda/top_k.cu, run on the CPU: every thread's sorted list of its
// entries (ids t, t + threads, ...) built with the kernel's own common::top_k::insert, then the kernel's
// merge (k rounds, each taking the best head of all lists), against the spec: the CPU op
// (cpu::top_k_row). This checks the algorithm and the shared list code here;
// tests/cuda/test_ops_top_k.cpp checks the kernel itself on a GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "kernels/common/top_k.h"
#include "ops/top_k.h"

namespace dragoman {
namespace {

struct Picks {
  std::vector<float> values;
  std::vector<std::int32_t> ids;
};

// The kernel's algorithm for one row, with lists of kList entries in `threads` threads.
template <int kList>
Picks one_pass(const std::vector<float>& row, int threads, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b) {
  const auto v = static_cast<std::int64_t>(row.size());
  std::vector<std::vector<float>> list_value(static_cast<std::size_t>(threads));
  std::vector<std::vector<std::int32_t>> list_id(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    float values[kList];
    std::int32_t ids[kList];
    for (int j = 0; j < kList; ++j) {
      values[j] = -std::numeric_limits<float>::infinity();
      ids[j] = common::top_k::kNoId;
    }
    for (std::int64_t i = t; i < v; i += threads) {
      const auto id = static_cast<std::int32_t>(i);
      if (common::top_k::candidate(row[i], id, skip_a, skip_b)) common::top_k::insert(values, ids, row[i], id);
    }
    for (int j = 1; j < kList; ++j) REQUIRE_FALSE(common::top_k::before(values[j], ids[j], values[j - 1], ids[j - 1]));
    list_value[t].assign(values, values + kList);
    list_id[t].assign(ids, ids + kList);
  }
  Picks out;
  std::vector<int> head(static_cast<std::size_t>(threads), 0);
  for (std::int64_t j = 0; j < k; ++j) {
    float value = -std::numeric_limits<float>::infinity();
    std::int32_t id = common::top_k::kNoId;
    int owner = -1;
    for (int t = 0; t < threads; ++t) {
      if (head[t] == kList) continue;
      const float mine = list_value[t][head[t]];
      const std::int32_t mine_id = list_id[t][head[t]];
      if (common::top_k::before(mine, mine_id, value, id)) {
        value = mine;
        id = mine_id;
        owner = t;
      }
    }
    if (id != common::top_k::kNoId) ++head[owner];
    out.values.push_back(id == common::top_k::kNoId ? -std::numeric_limits<float>::infinity() : value);
    out.ids.push_back(id == common::top_k::kNoId ? -1 : id);
  }
  return out;
}

Picks one_pass_for(const std::vector<float>& row, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b) {
  const int list = common::top_k::list_length(k);
  const int threads = common::top_k::list_threads(list);
  switch (list) {
    case 2: return one_pass<2>(row, threads, k, skip_a, skip_b);
    case 4: return one_pass<4>(row, threads, k, skip_a, skip_b);
    case 8: return one_pass<8>(row, threads, k, skip_a, skip_b);
    case 16: return one_pass<16>(row, threads, k, skip_a, skip_b);
    case 32: return one_pass<32>(row, threads, k, skip_a, skip_b);
    default: FAIL("no one-pass list for k " << k); return {};
  }
}

// The spec: the CPU op (cpu::top_k_row, the rest of a short row -1 and -inf).
Picks spec(const std::vector<float>& row, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b) {
  const Tensor x = Tensor::from_vector(row, {1, static_cast<std::int64_t>(row.size())});
  ops::HostTopK top = ops::top_k_rows_to_host(x, k, skip_a, skip_b, 0);
  return {std::move(top.values), std::move(top.ids)};
}

}  // namespace

TEST_CASE("The one-pass top-k's lists list_length and list_threads", "[top_k]") {
  CHECK(common::top_k::list_length(1) == 2);
  CHECK(common::top_k::list_length(2) == 2);
  CHECK(common::top_k::list_length(3) == 4);
  CHECK(common::top_k::list_length(8) == 8);
  CHECK(common::top_k::list_length(9) == 16);
  CHECK(common::top_k::list_length(32) == 32);
  CHECK(common::top_k::list_length(33) == 0);  // k passes instead
  CHECK(common::top_k::list_threads(16) == 256);
  CHECK(common::top_k::list_threads(32) == 128);
}

TEST_CASE("The one-pass top-k's algorithm picks what cpu top_k_row picks", "[top_k]") {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> coarse(-40, 0);  // few distinct values: many ties
  std::uniform_real_distribution<float> fine(-30.0f, 0.0f);
  for (const std::int64_t v : {3, 33, 300, 1025, 37000}) {
    for (const std::int64_t k : {1, 2, 3, 4, 5, 8, 9, 16, 17, 31, 32}) {
      for (int pattern = 0; pattern < 4; ++pattern) {
        INFO("V " << v << ", k " << k << ", pattern " << pattern);
        std::vector<float> row(static_cast<std::size_t>(v));
        const int threads = common::top_k::list_threads(common::top_k::list_length(k));
        for (std::int64_t i = 0; i < v; ++i) {
          switch (pattern) {
            case 0: row[i] = static_cast<float>(coarse(rng)) * 0.25f; break;           // ties
            case 1: row[i] = fine(rng); break;                                         // distinct
            case 2: row[i] = i % threads == 5 ? fine(rng) + 40.0f : fine(rng); break;  // all best in one thread
            default: row[i] = i % 3 == 0 ? fine(rng) : -std::numeric_limits<float>::infinity(); break;
          }
        }
        if (pattern == 0) {
          for (std::size_t i = 0; i < row.size(); i += 11) row[i] = -std::numeric_limits<float>::infinity();
        }
        const auto skip_b = static_cast<std::int32_t>(v > 2 ? 2 : 1);
        const Picks expected = spec(row, k, 0, skip_b);
        const Picks got = one_pass_for(row, k, 0, skip_b);
        CHECK(got.ids == expected.ids);
        CHECK(got.values == expected.values);
      }
    }
  }
}

}  // namespace dragoman
