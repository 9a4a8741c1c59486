// cuda::top_k_rows (through ops::top_k_rows on GPU tensors) against the CPU op, exactly: random rows
// with many ties and -inf entries, V from 3 to 37,000 (a WMT vocabulary), k from 1 to 64 (beam 32),
// rows with fewer candidates than k.
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
  for (const std::int64_t v : {3, 33, 1025, 37000}) {
    for (const std::int64_t k : {1, 2, 8, 64}) {
      INFO("V " << v << ", k " << k);
      const std::int64_t rows = 37;
      std::vector<float> x(static_cast<std::size_t>(rows * v));
      std::uniform_int_distribution<int> coarse(-40, 0);  // few distinct values: many ties
      for (float& value : x) value = static_cast<float>(coarse(rng)) * 0.25f;
      for (std::size_t i = 0; i < x.size(); i += 11) x[i] = -std::numeric_limits<float>::infinity();
      const Tensor cpu = Tensor::from_vector(x, {rows, v});
      const ops::TopK expected = ops::top_k_rows(cpu, k, 0, 2, static_cast<std::int32_t>(v / 2));
      const ops::TopK got = ops::top_k_rows(cpu.to(gpu), k, 0, 2, static_cast<std::int32_t>(v / 2));
      CHECK(got.ids.to(Device::cpu()).to_vector<std::int32_t>() == expected.ids.to_vector<std::int32_t>());
      CHECK(got.values.to(Device::cpu()).to_vector<float>() == expected.values.to_vector<float>());
      CHECK(got.eos_values.to(Device::cpu()).to_vector<float>() == expected.eos_values.to_vector<float>());
    }
  }
}

}  // namespace dragoman
