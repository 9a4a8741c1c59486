// training.zero_init_residual: the trainer starts the residual branches' last matrices at zero.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "train/run_dir.h"
#include "train/train_testing.h"
#include "train/trainer.h"

namespace dragoman::train {

TEST_CASE("train: training.zero_init_residual starts the residual branches' last matrices at zero", "[train]") {
  const test::ReversalTask task("zero-init-residual", 200);
  TrainConfig config = task.config();
  config.training.zero_init_residual = true;
  config.training.max_steps = 1;
  config.training.valid_every = 0;
  config.training.lr_factor = 1.0;
  config.training.lr = 1e-30;  // one update that moves nothing measurably: the weights are the start
  const TrainOptions options = task.options("run");
  REQUIRE(train(config, options).step == 1);
  const model::Transformer trained = model::load_model(checkpoint_model_path(options.run_dir, 1), DType::kF32);
  model::Transformer plain(trained.config(), DType::kF32);
  plain.initialize(config.training.seed);
  const std::vector<float> w0 = plain.parameters().values().to_vector<float>();
  const std::vector<float> w1 = trained.parameters().values().to_vector<float>();
  REQUIRE(w0.size() == w1.size());
  int zeroed = 0;
  for (const model::ParameterEntry& e : trained.parameters().entries()) {
    INFO(e.spec.name);
    const bool last = e.spec.name.find(".out_proj.weight") != std::string::npos ||
                      e.spec.name.find(".fc2.weight") != std::string::npos;
    zeroed += last;
    double largest = 0;
    std::size_t differ = 0;
    for (std::int64_t i = e.offset; i < e.offset + e.numel; ++i) {
      largest = std::max(largest, std::abs(static_cast<double>(w1[static_cast<std::size_t>(i)])));
      differ += w1[static_cast<std::size_t>(i)] != w0[static_cast<std::size_t>(i)];
    }
    if (last) {
      CHECK(largest < 1e-20);
    } else if (e.spec.init != model::ParameterInit::kZeros) {
      CHECK(differ == 0);  // Xavier, normal and ones as without the option
    }
  }
  CHECK(zeroed == 2 * 2 + 3 * 2);  // 2 + 2 layers
}

}  // namespace dragoman::train
