// cuda::top_k_rows (through ops::top_k_rows on GPU tensors) against the CPU op, exactly: random rows
// with many ties and -inf entries, and rows whose best entries all fall to one thread of the
// one-pass kernel; V from 3 to 37,000 (a WMT vocabulary), k from 1 to 64 (beam 32): every list
// length of the one-pass kernel (k <= 32) and the k-pass kernel above it; rows with fewer
// candidates than k. ops::top_k_rows_to_host (one packed copy) gives the same.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "ops/top_k.h"

namespace dragoman {

TEST_CASE("cuda top_k_rows picks the CPU's candidates, values and EOS values exactly", "[cuda][top_k]") {
  const Device gpu = Device::cuda(0);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coarse(-40, 0);  // few distinct values: many ties
  std::uniform_real_distribution<float> fine(-30.0f, 0.0f);
  for (const std::int64_t v : {3, 33, 1025, 37000}) {
    for (const std::int64_t k : {1, 2, 3, 8, 9, 16, 17, 32, 33, 64}) {
      for (const bool one_thread : {false, true}) {
        INFO("V " << v << ", k " << k << (one_thread ? ", the best entries in one thread's stride" : ", ties"));
        const std::int64_t rows = 37;
        std::vector<float> x(static_cast<std::size_t>(rows * v));
        for (std::size_t i = 0; i < x.size(); ++i) {
          // Ids 5, 5 + 128, 5 + 256, ... of each row: one thread's entries at 128 and 256 threads.
          const auto id = static_cast<std::int64_t>(i) % v;
          x[i] = one_thread ? (id % 128 == 5 ? fine(rng) + 40.0f : fine(rng)) : static_cast<float>(coarse(rng)) * 0.25f;
        }
        if (!one_thread) {
          for (std::size_t i = 0; i < x.size(); i += 11) x[i] = -std::numeric_limits<float>::infinity();
        }
        const Tensor cpu = Tensor::from_vector(x, {rows, v});
        const auto eos = static_cast<std::int32_t>(v / 2);
        const ops::TopK expected = ops::top_k_rows(cpu, k, 0, 2, eos);
        const ops::TopK got = ops::top_k_rows(cpu.to(gpu), k, 0, 2, eos);
        CHECK(got.ids.to(Device::cpu()).to_vector<std::int32_t>() == expected.ids.to_vector<std::int32_t>());
        CHECK(got.values.to(Device::cpu()).to_vector<float>() == expected.values.to_vector<float>());
        CHECK(got.eos_values.to(Device::cpu()).to_vector<float>() == expected.eos_values.to_vector<float>());
        const ops::HostTopK host = ops::top_k_rows_to_host(cpu.to(gpu), k, 0, 2, eos);
        CHECK(host.ids == expected.ids.to_vector<std::int32_t>());
        CHECK(host.values == expected.values.to_vector<float>());
        CHECK(host.eos_values == expected.eos_values.to_vector<float>());
      }
    }
  }
}

}  // namespace dragoman
