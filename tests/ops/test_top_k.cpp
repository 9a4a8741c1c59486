// ops::top_k_rows, the beam search's candidates (kernels/top_k.h is the spec): against a full
// sort of each row, with ties, -inf entries, the left-out ids and rows with fewer than k candidates,
// on each device of the test binary (its f32 op case).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ops/op_testing.h"
#include "ops/top_k.h"

namespace dragoman {

TEST_CASE("ops::top_k_rows: the k best of each row, best first, ties by lower id, two ids left out", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    if (c.dtype != DType::kF32) continue;  // the op takes f32 log-probabilities: one case a device
    DYNAMIC_SECTION(c.name) {
      const float inf = std::numeric_limits<float>::infinity();
      for (const std::int64_t v : {3, 5, 37, 1025}) {
        for (const std::int64_t k : {1, 2, 8, 64}) {
          INFO("V " << v << ", k " << k);
          const std::int64_t rows = 4;
          std::vector<float> x(static_cast<std::size_t>(rows * v));
          for (std::size_t i = 0; i < x.size(); ++i) {
            x[i] = static_cast<float>((i * 7919 + 13) % 23) - 11.0f;  // ties
          }
          x[1] = -inf;                            // left out (skip_b)
          x[2] = -inf;                            // a candidate: after every finite one
          x[static_cast<std::size_t>(v)] = -inf;  // row 1's first entry (left out: skip_a)
          const Tensor t = Tensor::from_vector(x, {rows, v}).to(c.device);
          const std::int32_t skip_a = 0, skip_b = 1, eos = static_cast<std::int32_t>(v - 1);
          const ops::TopK top = ops::top_k_rows(t, k, skip_a, skip_b, eos);
          REQUIRE(top.values.shape() == Shape{rows, k});
          const std::vector<float> values = top.values.to(Device::cpu()).to_vector<float>();
          const std::vector<float> eos_values = top.eos_values.to(Device::cpu()).to_vector<float>();
          const std::vector<std::int32_t> ids = top.ids.to(Device::cpu()).to_vector<std::int32_t>();
          for (std::int64_t r = 0; r < rows; ++r) {
            std::vector<std::pair<float, std::int32_t>> sorted;
            for (std::int32_t id = 0; id < v; ++id) {
              if (id != skip_a && id != skip_b) sorted.emplace_back(x[static_cast<std::size_t>(r * v + id)], id);
            }
            std::stable_sort(sorted.begin(), sorted.end(),
                             [](const auto& a, const auto& b) { return a.first > b.first; });
            for (std::int64_t j = 0; j < k; ++j) {
              const std::size_t at = static_cast<std::size_t>(r * k + j);
              if (j < static_cast<std::int64_t>(sorted.size())) {
                CHECK(ids[at] == sorted[static_cast<std::size_t>(j)].second);
                CHECK(values[at] == sorted[static_cast<std::size_t>(j)].first);
              } else {
                CHECK(ids[at] == -1);
                CHECK(values[at] == -inf);
              }
            }
            CHECK(eos_values[static_cast<std::size_t>(r)] == x[static_cast<std::size_t>(r * v + eos)]);
          }
          const ops::HostTopK host = ops::top_k_rows_to_host(t, k, skip_a, skip_b, eos);  // the same, as vectors
          CHECK(host.values == values);
          CHECK(host.ids == ids);
          CHECK(host.eos_values == eos_values);
        }
      }
      CHECK_THROWS_WITH(ops::top_k_rows(Tensor::zeros({2, 3}, DType::kF64, c.device), 1, 0, 1, 2),
                        Catch::Contains("f32"));
      CHECK_THROWS_WITH(ops::top_k_rows_to_host(Tensor::zeros({2, 3}, DType::kF32, c.device), 1, 0, 1, 3),
                        Catch::Contains("eos in [0, V)"));
    }
  }
}

}  // namespace dragoman
