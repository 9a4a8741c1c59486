// Initialisation (docs/MODEL.md): each element from its own Philox words, and the residual
// branches' last matrices at zero on request.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/philox.h"
#include "device/cpu/threads.h"
#include "model/model_testing.h"
#include "model/transformer.h"

namespace dragoman::model {

TEST_CASE("initialize draws each element from its own Philox words, whatever the thread count", "[model]") {
  // The spec: element i of entry p takes word i of stream (kInit, p) (Xavier uniform), or words
  // 2 i and 2 i + 1 (Box-Muller normal); zeros and ones as named.
  ModelConfig c = test::fixture_config("pre_untied_learned");
  for (const int threads : {1, 2}) {
    cpu::use_compute_threads_here(threads);
    Transformer model(c, DType::kF64);
    model.initialize(11);
    const std::vector<double> values = model.parameters().values().to_vector<double>();
    const auto u = [](std::uint64_t stream, std::uint64_t i) {
      return 1.0 - static_cast<double>(philox::bits(11, stream, i)) / 4294967296.0;
    };
    std::size_t checked = 0, mismatches = 0;
    const std::vector<ParameterEntry>& entries = model.parameters().entries();
    for (std::size_t p = 0; p < entries.size(); ++p) {
      const ParameterEntry& e = entries[p];
      const std::uint64_t stream = philox::purpose_stream(philox::Purpose::kInit, p);
      for (std::int64_t i = 0; i < e.numel; ++i) {
        double want = 0.0;
        switch (e.spec.init) {
          case ParameterInit::kZeros: want = 0.0; break;
          case ParameterInit::kOnes: want = 1.0; break;
          case ParameterInit::kXavierUniform:
            want = std::sqrt(6.0 / static_cast<double>(e.spec.shape.at(0) + e.spec.shape.at(1))) *
                   (2.0 * u(stream, i) - 1.0);
            break;
          case ParameterInit::kNormal:
            want = e.spec.std * std::sqrt(-2.0 * std::log(u(stream, 2 * i))) *
                   std::cos(6.283185307179586 * u(stream, 2 * i + 1));
            break;
        }
        mismatches += values[static_cast<std::size_t>(e.offset + i)] != want;
        ++checked;
      }
    }
    INFO(threads << " threads");
    CHECK(checked == values.size());
    CHECK(mismatches == 0);
  }
  cpu::use_compute_threads_here(1);
}

TEST_CASE("initialize with zero_residual: the residual branches' last matrices start at zero and the rest is unchanged",
          "[model]") {
  for (const std::string& name : test::kFixtureCases) {
    SECTION(name) {
      const ModelConfig c = test::fixture_config(name);
      Transformer plain(c, DType::kF64), zeroed(c, DType::kF64);
      plain.initialize(11);
      zeroed.initialize(11, true);
      const std::vector<double> a = plain.parameters().values().to_vector<double>();
      const std::vector<double> b = zeroed.parameters().values().to_vector<double>();
      std::int64_t zeroed_entries = 0;
      for (const ParameterEntry& e : plain.parameters().entries()) {
        INFO(e.spec.name);
        const std::string& n = e.spec.name;
        const bool last_of_branch =
            (n.find(".out_proj.weight") != std::string::npos || n.find(".fc2.weight") != std::string::npos);
        bool all_zero = true, same = true;
        for (std::int64_t i = e.offset; i < e.offset + e.numel; ++i) {
          all_zero = all_zero && b[static_cast<std::size_t>(i)] == 0.0;
          same = same && b[static_cast<std::size_t>(i)] == a[static_cast<std::size_t>(i)];
        }
        if (last_of_branch) {
          CHECK(all_zero);
          ++zeroed_entries;
        } else {
          CHECK(same);
        }
      }
      // Self-attention and the feed-forward in every layer, cross-attention in the decoder's.
      CHECK(zeroed_entries == 2 * c.encoder_layers + 3 * c.decoder_layers);
    }
  }
}

}  // namespace dragoman::model
