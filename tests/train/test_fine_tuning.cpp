// Starting from a model file (train/fine_tuning.h): the config's architecture keys against the
// model's, the regularisation kept, training.init_from's path, freezing, the constant schedule.
// The runs themselves: tests/cli/finetune_cli.sh.
#include <catch2/catch.hpp>

#include <filesystem>

#include "base/error.h"
#include "train/config.h"
#include "train/fine_tuning.h"
#include "train/schedule.h"
#include "train/train_testing.h"

namespace dragoman::train {
namespace {

using Catch::Matchers::Contains;

model::ModelConfig imported() {
  model::ModelConfig m;
  m.encoder_layers = 2;
  m.decoder_layers = 3;
  m.d_model = 32;
  m.d_ff = 64;
  m.heads = 4;
  m.activation = model::Activation::kSwish;
  m.output_bias = true;
  m.share_embeddings = false;
  m.src_vocab_size = 100;
  m.tgt_vocab_size = 120;
  m.pad_id = 7;
  m.bos_id = 7;
  m.eos_id = 0;
  m.dropout = 0.3;
  return m;
}

TrainConfig loaded(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  const std::string dir = test::scratch_dir("fine_tuning_config");
  test::write_text(dir + "/c.yaml", yaml);
  return TrainConfig::load(dir + "/c.yaml", overrides);
}

const char* kData = "data:\n  train_source: a.en\n  train_target: a.de\n";

TEST_CASE("init_from: the architecture comes from the model, the regularisation from the config", "[train]") {
  TrainConfig c = loaded(std::string(kData) + "model:\n  dropout: 0.1\n  label_smoothing: 0.2\n");
  CHECK(c.model_keys_given == std::vector<std::string>{"dropout", "label_smoothing"});
  apply_init_model(c, imported(), "m.safetensors");
  const model::ModelConfig m = imported();
  CHECK(c.model.encoder_layers == 2);
  CHECK(c.model.decoder_layers == 3);
  CHECK(c.model.d_model == 32);
  CHECK(c.model.activation == model::Activation::kSwish);
  CHECK(c.model.output_bias);
  CHECK(!c.model.share_embeddings);
  CHECK(c.model.src_vocab_size == 100);
  CHECK(c.model.tgt_vocab_size == 120);
  CHECK(c.model.pad_id == m.pad_id);
  CHECK(c.model.bos_id == m.bos_id);
  CHECK(c.model.eos_id == m.eos_id);
  CHECK(c.model.dropout == 0.1);            // given: the config's
  CHECK(c.model.label_smoothing == 0.2);    // given: the config's
  CHECK(c.model.attention_dropout == 0.0);  // not given: the default, not the model's
  // Applying it again (train does, after --dump-config's resolution) changes nothing.
  const model::ModelConfig once = c.model;
  apply_init_model(c, imported(), "m.safetensors");
  CHECK(c.model == once);
}

TEST_CASE("init_from: an architecture key the config gives must agree with the model", "[train]") {
  TrainConfig agree = loaded(kData, {"model.d_model=32", "model.activation=swish"});
  CHECK_NOTHROW(apply_init_model(agree, imported(), "m.safetensors"));
  TrainConfig layers = loaded(kData, {"model.encoder_layers=6"});
  CHECK_THROWS_WITH(apply_init_model(layers, imported(), "m.safetensors"),
                    Contains("training.init_from m.safetensors: the config's model.encoder_layers is 6, the model's 2 "
                             "(the architecture comes from the model: leave model.encoder_layers out of the config)"));
  TrainConfig activation = loaded(kData, {"model.activation=relu"});
  CHECK_THROWS_WITH(apply_init_model(activation, imported(), "m.safetensors"),
                    Contains("model.activation is \"relu\", the model's \"swish\""));
  // A key given with its default value still contradicts a model that differs.
  TrainConfig defaults = loaded(std::string(kData) + "model:\n  d_model: 512\n");
  CHECK_THROWS_WITH(apply_init_model(defaults, imported(), "m.safetensors"), Contains("model.d_model is 512"));
}

TEST_CASE("init_from: relative to the config file, checked, and not with data.vocabulary", "[train]") {
  const std::string dir = test::scratch_dir("fine_tuning_paths");
  test::write_text(dir + "/c.yaml", std::string(kData) + "training:\n  init_from: models/m.safetensors\n");
  TrainConfig c = TrainConfig::load(dir + "/c.yaml", {});
  CHECK(c.training.init_from == (std::filesystem::path(dir) / "models/m.safetensors").lexically_normal().string());
  CHECK_THROWS_WITH(c.check_files(), Contains("config key training.init_from: no such file: "));
  CHECK(TrainConfig::load(dir + "/c.yaml", {}).to_json()["training"]["init_from"] == c.training.init_from);
  c.data.vocabulary = "v.model";
  c.training.max_steps = 10;
  CHECK_THROWS_WITH(c.validate(), Contains("training.init_from and data.vocabulary"));
}

TEST_CASE("training.freeze: its groups and the parameters in them", "[train]") {
  CHECK(freeze_groups("").empty());
  CHECK(freeze_groups("embeddings, encoder,embeddings") == std::vector<std::string>{"embeddings", "encoder"});
  CHECK_THROWS_WITH(freeze_groups("encoders"), Contains("'encoders' is not a part of the model"));
  CHECK_THROWS_WITH(freeze_groups("encoder,"), Contains("'' is not a part of the model"));
  const std::vector<std::string> embeddings{"embeddings"}, encoder{"encoder"}, decoder{"decoder"};
  for (const char* name : {"embed.weight", "encoder.embed.weight", "decoder.embed.weight", "encoder.positions.weight",
                           "decoder.positions.weight"}) {
    CHECK(is_frozen(name, embeddings));
  }
  CHECK(!is_frozen("output.weight", embeddings));
  CHECK(!is_frozen("encoder.layers.0.ffn.fc1.weight", embeddings));
  CHECK(is_frozen("encoder.layers.0.ffn.fc1.weight", encoder));
  CHECK(is_frozen("encoder.embed.weight", encoder));
  CHECK(!is_frozen("embed.weight", encoder));  // shared by both sides: frozen as "embeddings" only
  CHECK(!is_frozen("decoder.layers.0.self_attn.q_proj.weight", encoder));
  CHECK(is_frozen("decoder.layers.0.self_attn.q_proj.weight", decoder));
  CHECK(is_frozen("output.weight", decoder));
  CHECK(is_frozen("output.bias", decoder));
  CHECK(is_frozen("output.bias", {"output_bias"}));
  CHECK(!is_frozen("output.weight", {"output_bias"}));
  CHECK(!is_frozen("decoder.layers.0.ffn.fc1.bias", {"output_bias"}));
  TrainConfig c = loaded(kData, {"training.freeze=decoder", "training.weight_decay=0.01", "training.max_steps=10"});
  CHECK_THROWS_WITH(c.validate(), Contains("set weight_decay to 0"));
  CHECK_THROWS_WITH(loaded(kData, {"training.freeze=all", "training.max_steps=10"}).validate(),
                    Contains("'all' is not a part of the model"));
}

TEST_CASE("lr_decay constant: the warmup, then the peak held", "[train]") {
  for (std::int64_t step : {1, 5, 10}) {
    CHECK(learning_rate(step, 512, 10, 1e-3, 1.0, "constant", 100) == learning_rate(step, 512, 10, 1e-3, 1.0));
  }
  for (std::int64_t step : {11, 50, 100, 1000}) CHECK(learning_rate(step, 512, 10, 1e-3, 1.0, "constant", 100) == 1e-3);
  CHECK(!decays_to_zero("constant"));
  CHECK(loaded(kData, {"training.lr_decay=constant", "training.max_steps=0", "training.max_epochs=2"})
            .training.lr_decay == "constant");
  CHECK_NOTHROW(
      loaded(kData, {"training.lr_decay=constant", "training.max_steps=5", "training.warmup_steps=10"}).validate());
  CHECK_THROWS_WITH(loaded(kData, {"training.lr_decay=constant", "training.lr_hold=0.5", "training.max_steps=100",
                                   "training.warmup_steps=10"})
                        .validate(),
                    Contains("lr_hold holds the peak before a decay to zero"));
}

}  // namespace
}  // namespace dragoman::train
