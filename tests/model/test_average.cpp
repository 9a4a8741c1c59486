// Checkpoint averaging: N copies of one model give it back exactly, two models give their mean
// (float64 accumulation, one rounding to float32), and inputs with another config or vocabulary
// are refused, naming what differs.
#include <catch2/catch.hpp>

#include <cmath>

#include "base/error.h"
#include "model/average.h"
#include "model/model_testing.h"
#include "train/train_testing.h"

namespace dragoman::model {
namespace {

using Catch::Matchers::Contains;

std::string save(const std::string& dir, const std::string& name, const Transformer& model, std::int64_t step,
                 const std::string& vocabulary = "vocab") {
  ModelFileInfo info;
  info.step = step;
  info.vocabulary = vocabulary;
  const std::string path = dir + "/" + name + ".safetensors";
  save_model(path, model, info);
  return path;
}

Transformer initialized(const ModelConfig& config, std::uint64_t seed) {
  Transformer model(config, DType::kF32);
  model.initialize(seed);
  return model;
}

}  // namespace

TEST_CASE("average-checkpoints: N copies of a model give it back bit for bit", "[model]") {
  const std::string dir = test::scratch_dir("average_same");
  const Transformer model = initialized(test::fixture_config("post_shared_tied"), 5);
  const std::string path = save(dir, "a", model, 100);
  for (const std::size_t n : {1, 3, 7}) {
    const AveragedModel averaged = average_model_files(std::vector<std::string>(n, path));
    CHECK(averaged.model.parameters().values().to_vector<float>() == model.parameters().values().to_vector<float>());
    CHECK(averaged.model.config() == model.config());
    CHECK(averaged.info.vocabulary == "vocab");
    CHECK(averaged.info.step == 100);
  }
}

TEST_CASE("average-checkpoints: two models give their element-wise mean", "[model]") {
  const std::string dir = test::scratch_dir("average_two");
  const ModelConfig config = test::fixture_config("pre_untied_learned");
  const Transformer a = initialized(config, 1), b = initialized(config, 2);
  const AveragedModel averaged = average_model_files({save(dir, "a", a, 10), save(dir, "b", b, 20)});
  const std::vector<float> va = a.parameters().values().to_vector<float>();
  const std::vector<float> vb = b.parameters().values().to_vector<float>();
  const std::vector<float> mean = averaged.model.parameters().values().to_vector<float>();
  REQUIRE(mean.size() == va.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < va.size(); ++i) {
    // (a + b) / 2 in double, rounded once: exactly the float nearest to the true mean.
    const float expected = static_cast<float>((static_cast<double>(va[i]) + static_cast<double>(vb[i])) / 2.0);
    mismatches += mean[i] != expected;
  }
  CHECK(mismatches == 0);
  CHECK(averaged.info.step == 20);  // the newest input's step
  CHECK(averaged.info.metadata.at("averaged_from") == R"(["a.safetensors","b.safetensors"])");

  // The result is a model file translate can load.
  const std::string out = dir + "/avg.safetensors";
  save_model(out, averaged.model, averaged.info);
  ModelFileInfo info;
  CHECK(load_model(out, DType::kF32, &info).parameters().values().to_vector<float>() == mean);
  CHECK(info.vocabulary == "vocab");
}

TEST_CASE("average-checkpoints: inputs with another config or vocabulary are refused", "[model]") {
  const std::string dir = test::scratch_dir("average_mismatch");
  ModelConfig config = test::fixture_config("post_shared_tied");
  const std::string a = save(dir, "a", initialized(config, 1), 1);
  ModelConfig other = config;
  other.d_ff = config.d_ff * 2;
  const std::string b = save(dir, "b", initialized(other, 1), 2);
  CHECK_THROWS_WITH(average_model_files({a, b}),
                    Contains("b.safetensors has another model config") && Contains("d_ff: " + std::to_string(config.d_ff)));
  const std::string c = save(dir, "c", initialized(config, 2), 3, "another vocabulary");
  CHECK_THROWS_WITH(average_model_files({a, c}), Contains("c.safetensors has another vocabulary"));
  CHECK_THROWS_WITH(average_model_files({a, dir + "/missing.safetensors"}), Contains("missing.safetensors"));
  CHECK_THROWS_AS(average_model_files({}), Error);
}

}  // namespace dragoman::model
