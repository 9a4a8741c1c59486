// The Transformer's forward pass against an independent numpy implementation of docs/MODEL.md
// (tests/model/gen_model_fixtures.py): model files written by Python's safetensors load, and the
// loss, nll, encoder output and log-probabilities agree to float64 precision.
#include <catch2/catch.hpp>

#include <cmath>

#include "eval/fixtures.h"
#include "model/checkpoint.h"
#include "model/model_testing.h"

namespace dragoman::model {
namespace {

// Largest |ours - theirs| over the real positions (rows < length) of a [B, L, X] tensor.
double max_difference(const Tensor& ours, const nlohmann::json& theirs, const Tensor& lengths) {
  const std::vector<double> values = ours.to(DType::kF64).to_vector<double>();
  const std::int64_t b = ours.dim(0), l = ours.dim(1), x = ours.dim(2);
  double worst = 0;
  for (std::int64_t i = 0; i < b; ++i) {
    for (std::int64_t t = 0; t < lengths.data<std::int32_t>()[i]; ++t) {
      for (std::int64_t k = 0; k < x; ++k) {
        const double expected = theirs[i][t][k].get<double>();
        worst = std::max(worst, std::abs(values[static_cast<std::size_t>((i * l + t) * x + k)] - expected));
      }
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("Transformer forward matches the numpy reference in float64", "[model]") {
  for (const std::string& name : test::kFixtureCases) {
    SECTION(name) {
      const nlohmann::json fixture = test::read_json_fixture("model/" + name + ".json");
      ModelFileInfo info;
      Transformer model = load_model(test::fixture_path("model/" + name + ".safetensors"), DType::kF64, &info);
      CHECK(model.config() == test::fixture_config(name));
      CHECK(model.config() == ModelConfig::from_json(fixture["model_config"], name));
      const Batch batch = test::batch_from_json(fixture);
      const Evaluation e = model.evaluate(batch);
      const LossResult& r = e.loss;
      CHECK(r.tokens == fixture["tokens"].get<std::int64_t>());
      CHECK(r.loss_sum == Approx(fixture["loss_sum"].get<double>()).epsilon(1e-12));
      CHECK(r.nll_sum == Approx(fixture["nll_sum"].get<double>()).epsilon(1e-12));
      CHECK(max_difference(e.encoder_output, fixture["encoder_output"], batch.src_lengths) < 1e-12);
      CHECK(max_difference(e.log_probs, fixture["log_probs"], batch.tgt_lengths) < 1e-12);
      // The training forward pass gives the same loss (no dropout here).
      ForwardActivations saved;
      CHECK(model.forward_loss(batch, {}, saved).loss_sum == r.loss_sum);
      CHECK_FALSE(saved.empty());
    }
  }
}

TEST_CASE("Transformer forward in float32 stays close to the float64 reference", "[model]") {
  for (const std::string& name : test::kFixtureCases) {
    SECTION(name) {
      const nlohmann::json fixture = test::read_json_fixture("model/" + name + ".json");
      Transformer model = load_model(test::fixture_path("model/" + name + ".safetensors"), DType::kF32);
      const Batch batch = test::batch_from_json(fixture);
      const Evaluation e = model.evaluate(batch);
      CHECK(e.loss.loss_sum == Approx(fixture["loss_sum"].get<double>()).epsilon(1e-5));
      CHECK(max_difference(e.log_probs, fixture["log_probs"], batch.tgt_lengths) < 1e-4);
    }
  }
}

}  // namespace dragoman::model
