// Training configs: defaults < YAML (with `base:` files) < --set; unknown keys, wrong types and
// impossible values are errors naming the key and where it came from; the shipped configs load and
// say what the paper says.
#include <catch2/catch.hpp>

#include <filesystem>

#include "base/error.h"
#include "train/accumulation.h"
#include "train/config.h"
#include "train/schedule.h"
#include "train/train_testing.h"

#ifndef DRAGOMAN_SOURCE_DIR
#error "DRAGOMAN_SOURCE_DIR must point at the repository (for configs/)"
#endif

namespace dragoman::train {
namespace {

using Catch::Matchers::Contains;

std::string write_config(const std::string& dir, const std::string& name, const std::string& yaml) {
  const std::string path = dir + "/" + name;
  test::write_text(path, yaml);
  return path;
}

const char* kMinimal =
    "data:\n  train_source: a.en\n  train_target: a.de\n"
    "model:\n  d_model: 64\n  heads: 4\n"
    "training:\n  max_steps: 10\n";

}  // namespace

TEST_CASE("train config: defaults < YAML < --set", "[train]") {
  const std::string dir = test::scratch_dir("config");
  const std::string path = write_config(dir, "c.yaml", kMinimal);
  const TrainConfig c = TrainConfig::load(path, {"training.max_steps=20", "model.dropout=0.3", "data.max_ratio=0"});
  CHECK(c.model.d_model == 64);  // YAML
  CHECK(c.model.heads == 4);
  CHECK(c.model.d_ff == 2048);        // default
  CHECK(c.model.dropout == 0.3);      // --set over the default
  CHECK(c.training.max_steps == 20);  // --set over YAML
  CHECK(c.data.max_ratio == 0.0);
  CHECK(c.training.adam_beta2 == 0.98);  // the paper's defaults
  CHECK(c.training.adam_eps == 1e-9);
  CHECK(c.training.warmup_steps == 4000);
  CHECK(c.data.train_source == dir + "/a.en");  // a config file's path: relative to its directory
  c.validate();
  // The resolved config round-trips through the YAML written into the run directory.
  const std::string saved = write_config(dir, "saved.yaml", to_yaml(c.to_json()));
  CHECK(TrainConfig::load(saved, {}).to_json() == c.to_json());
}

TEST_CASE("train config: a `base:` file is extended, relative to the including file", "[train]") {
  const std::string dir = test::scratch_dir("config_base");
  write_config(dir, "parent.yaml", "model:\n  d_model: 128\n  heads: 8\ntraining:\n  warmup_steps: 16\n");
  const std::string child = write_config(dir, "child.yaml",
                                         std::string("base: parent.yaml\n") + "model:\n  heads: 2\n" +
                                             "data:\n  train_tsv: x.tsv\ntraining:\n  max_steps: 5\n");
  const TrainConfig c = TrainConfig::load(child, {});
  CHECK(c.model.d_model == 128);
  CHECK(c.model.heads == 2);
  CHECK(c.training.warmup_steps == 16);
  write_config(dir, "loop.yaml", "base: loop.yaml\n");
  CHECK_THROWS_WITH(TrainConfig::load(dir + "/loop.yaml", {}), Contains("cycle"));
}

TEST_CASE("train config: data paths are relative to the config file that gives them", "[train]") {
  const std::string dir = test::scratch_dir("config_paths");
  std::filesystem::create_directories(dir + "/shared/corpus");
  std::filesystem::create_directories(dir + "/experiments");
  // The base file names its corpus relative to itself; the child adds a dev set relative to itself.
  write_config(dir, "shared/base.yaml", "data:\n  train_source: corpus/train.en\n  train_target: corpus/train.de\n");
  const std::string child = write_config(
      dir, "experiments/child.yaml",
      "base: ../shared/base.yaml\ndata:\n  valid_source: dev.en\n  valid_target: /abs/dev.de\n  vocabulary: ''\n");
  const TrainConfig c = TrainConfig::load(child, {"data.train_tsv=", "data.valid_tsv=rel/dev.tsv"});
  CHECK(c.data.train_source == dir + "/shared/corpus/train.en");
  CHECK(c.data.train_target == dir + "/shared/corpus/train.de");
  CHECK(c.data.valid_source == dir + "/experiments/dev.en");
  CHECK(c.data.valid_target == "/abs/dev.de");  // absolute stays
  CHECK(c.data.vocabulary.empty());             // empty stays empty
  CHECK(c.data.valid_tsv == "rel/dev.tsv");     // --set: the working directory's, made absolute later
  // The same config from another working directory gives the same paths.
  const std::filesystem::path here = std::filesystem::current_path();
  std::filesystem::current_path(dir + "/shared");
  const TrainConfig again = TrainConfig::load("../experiments/child.yaml", {});
  std::filesystem::current_path(here);
  CHECK(again.data.train_source == c.data.train_source);
  CHECK(again.data.valid_source == c.data.valid_source);
}

TEST_CASE("train config: check_files() names the key of a missing data file", "[train]") {
  const std::string dir = test::scratch_dir("config_files");
  test::write_text(dir + "/a.en", "a\n");
  test::write_text(dir + "/a.de", "b\n");
  const std::string path = write_config(dir, "c.yaml", kMinimal);
  TrainConfig::load(path, {}).check_files();  // both there
  CHECK_THROWS_WITH(TrainConfig::load(path, {"data.valid_source=" + dir + "/missing.en"}).check_files(),
                    Contains("config key data.valid_source: no such file: " + dir + "/missing.en") &&
                        Contains("relative to that file's directory"));
  CHECK_THROWS_WITH(TrainConfig::load(path, {"data.vocabulary=" + dir}).check_files(),
                    Contains("config key data.vocabulary: not a regular file: " + dir));
}

TEST_CASE("train config: errors name the key and the file", "[train]") {
  const std::string dir = test::scratch_dir("config_errors");
  const auto load = [&](const std::string& yaml, const std::vector<std::string>& overrides = {}) {
    return TrainConfig::load(write_config(dir, "bad.yaml", yaml), overrides);
  };
  CHECK_THROWS_WITH(load("training:\n  max_step: 10\n"),
                    Contains("bad.yaml") && Contains("'training.max_step'; did you mean 'training.max_steps'?"));
  CHECK_THROWS_WITH(load("model:\n  d_modell: 10\n"),
                    Contains("bad.yaml") && Contains("'model.d_modell'; did you mean 'model.d_model'?"));
  CHECK_THROWS_WITH(load("training:\n  zzzzzzzz: 10\n"),  // close to no key: the section's keys
                    Contains("'training.zzzzzzzz' (the keys of training: adam_beta1 ") && Contains(" max_steps "));
  CHECK_THROWS_WITH(load("optimizer:\n  lr: 1\n"),
                    Contains("bad.yaml") && Contains("'optimizer' (expected model, data, training, checkpoint)"));
  CHECK_THROWS_WITH(load("trainnig:\n  lr: 1\n"), Contains("section 'trainnig'; did you mean 'training'?"));
  CHECK_THROWS_WITH(load("training:\n  max_tokens: lots\n"), Contains("bad.yaml") && Contains("max_tokens"));
  CHECK_THROWS_WITH(load("training:\n  seed: -1\n"), Contains("seed"));
  CHECK_THROWS_WITH(load("model:\n  positions: rotary\n"), Contains("bad.yaml") && Contains("positions"));
  CHECK_THROWS_WITH(load("data: [1, 2\n"), Contains("bad.yaml") && Contains("invalid YAML"));
  CHECK_THROWS_WITH(load(kMinimal, {"training.warmup=5"}), Contains("--set training.warmup=5"));
  CHECK_THROWS_WITH(load(kMinimal, {"max_steps=5"}), Contains("section.key=value"));
  CHECK_THROWS_WITH(load(kMinimal, {"training.max_steps=many"}), Contains("--set") && Contains("max_steps"));
  CHECK_THROWS_WITH(TrainConfig::load(dir + "/missing.yaml", {}), Contains("missing.yaml"));
  // Found by fuzzing (fuzz/regressions/fuzz_config): yaml-cpp read invalid UTF-8 as U+FFFD, and
  // a key that is a list escaped as yaml-cpp's own exception.
  CHECK_THROWS_WITH(load("model:\n  d_model: 64\ndata:\n  train_tsv: a\xff.tsv\n"),
                    Contains("bad.yaml:4: invalid UTF-8"));
  CHECK_THROWS_WITH(load("? [a, b]\n: 1\n"), Contains("bad.yaml:1: a key that is not a name"));
  CHECK_THROWS_WITH(load("model:\n  ? {d_model: 1}\n  : 2\n"), Contains("bad.yaml:2: a key that is not a name"));
  CHECK_THROWS_WITH(load(kMinimal, {"data.train_tsv=x\xfe.tsv"}), Contains("--set: invalid UTF-8 at byte 17"));
  // NUL bytes make yaml-cpp read the text as UTF-16 or UTF-32 (fuzz/regressions/fuzz_config).
  CHECK_THROWS_WITH(load(std::string("model:\n  d_model: 6\0\0\0\n", 23)), Contains("bad.yaml:2: a NUL byte"));
  CHECK_THROWS_WITH(load(kMinimal, {std::string("training.threads=0\0\0\0", 21)}), Contains("--set: a NUL byte"));
  CHECK_THROWS_WITH(load("data:\n  train_tsv: \"a\\U0011FFFF\"\n"), Contains("bad.yaml:2: invalid YAML"));
}

TEST_CASE("train config: `--set section.key=` puts a key back to its default", "[train]") {
  const std::string dir = test::scratch_dir("config_reset");
  const std::string path =
      write_config(dir, "c.yaml", std::string(kMinimal) + "  warmup_steps: 100\n" + "  valid_bleu: true\n");
  const TrainConfig c = TrainConfig::load(path, {"data.train_target=", "training.warmup_steps=", "model.d_model="});
  CHECK(c.data.train_target.empty());
  CHECK(c.data.train_source == dir + "/a.en");
  CHECK(c.training.warmup_steps == 4000);
  CHECK(c.model.d_model == 512);
  CHECK(c.training.valid_bleu);  // untouched
  CHECK_THROWS_WITH(TrainConfig::load(path, {"training.warmup="}), Contains("training.warmup"));
  CHECK_THROWS_WITH(TrainConfig::load(path, {"trainings.max_steps="}),
                    Contains("'trainings'; did you mean 'training'?"));
}

TEST_CASE("train config: data paths are made absolute for the run directory", "[train]") {
  TrainConfig c;
  c.data.train_source = "corpus/a.en";
  c.data.valid_tsv = "/abs/dev.tsv";
  c.make_paths_absolute();
  CHECK(c.data.train_source == (std::filesystem::current_path() / "corpus/a.en").string());
  CHECK(c.data.valid_tsv == "/abs/dev.tsv");
  CHECK(c.data.train_target.empty());  // empty stays empty
}

TEST_CASE("train config: validate() refuses configs that cannot train", "[train]") {
  const std::string dir = test::scratch_dir("config_validate");
  const std::string path = write_config(dir, "c.yaml", kMinimal);
  const auto invalid = [&](const std::string& set) { return TrainConfig::load(path, {set}); };
  CHECK_THROWS_WITH(invalid("data.train_tsv=x.tsv").validate(), Contains("either"));
  CHECK_THROWS_WITH(invalid("data.train_target=\"\"").validate(), Contains("go together"));
  CHECK_THROWS_WITH(invalid("data.train_target=").validate(), Contains("go together"));  // reset to ""
  CHECK_THROWS_WITH(invalid("training.lr=-1").validate(), Contains("training.lr must be >= 0"));
  CHECK_THROWS_WITH(TrainConfig::load(path, {"training.lr=5e-4", "training.lr_factor=2"}).validate(),
                    Contains("not both"));
  CHECK_NOTHROW(invalid("training.lr=5e-4").validate());
  CHECK_THROWS_WITH(invalid("data.curriculum=1.5").validate(), Contains("data.curriculum must be in [0, 1]"));
  CHECK_THROWS_WITH(invalid("data.curriculum_start=0").validate(), Contains("data.curriculum_start must be in (0, 1]"));
  CHECK_NOTHROW(invalid("data.curriculum=0.5").validate());
  CHECK_THROWS_WITH(invalid("training.threads=1025").validate(), Contains("training.threads must be from 0"));
  CHECK_THROWS_WITH(invalid("training.threads=-1").validate(), Contains("training.threads"));
  CHECK_NOTHROW(invalid("training.threads=1024").validate());
  CHECK_THROWS_WITH(invalid("data.vocab_type=wordpiece").validate(), Contains("vocab_type"));
  CHECK_THROWS_WITH(invalid("training.update_freq=-1").validate(), Contains("update_freq"));
  CHECK_THROWS_WITH(invalid("training.tokens_per_update=-1").validate(), Contains("tokens_per_update"));
  CHECK_NOTHROW(invalid("training.update_freq=0").validate());  // derived
  CHECK_THROWS_WITH(TrainConfig::load(path, {"training.update_freq=2", "training.tokens_per_update=9000"}).validate(),
                    Contains("both set: give one"));
  CHECK_THROWS_WITH(invalid("training.max_tokens=0").validate(), Contains("max_tokens"));
  CHECK_THROWS_WITH(invalid("checkpoint.keep_last=0").validate(), Contains("keep_last"));
  CHECK_THROWS_WITH(invalid("training.valid_bleu=1"), Contains("training.valid_bleu") && Contains("true or false"));
  CHECK_THROWS_WITH(invalid("training.valid_beam=0").validate(), Contains("valid_beam"));
  CHECK_THROWS_WITH(invalid("training.best_metric=chrf").validate(), Contains("nll or bleu"));
  CHECK_THROWS_WITH(invalid("training.best_metric=bleu").validate(), Contains("needs training.valid_bleu"));
  CHECK_NOTHROW(TrainConfig::load(path, {"training.best_metric=bleu", "training.valid_bleu=true"}).validate());
  CHECK_THROWS_WITH(invalid("training.optimizer=sgd").validate(), Contains("training.optimizer must be adam or muon"));
  CHECK_NOTHROW(invalid("training.optimizer=muon").validate());
  CHECK_THROWS_WITH(invalid("training.muon_lr_scale=0").validate(), Contains("training.muon_lr_scale"));
  CHECK_THROWS_WITH(invalid("training.muon_momentum=1").validate(), Contains("training.muon_momentum"));
  CHECK_THROWS_WITH(invalid("training.muon_ns_steps=0").validate(), Contains("training.muon_ns_steps"));
  TrainConfig no_end = TrainConfig::load(path, {"training.max_steps=0"});
  CHECK_THROWS_WITH(no_end.validate(), Contains("max_steps"));
  CHECK_THROWS_WITH(TrainConfig::load(path, {"model.heads=3"}).model.validate(), Contains("heads"));
}

TEST_CASE("train config: training.devices names the data-parallel workers", "[train]") {
  const std::string dir = test::scratch_dir("config_devices");
  const std::string path = write_config(dir, "c.yaml", kMinimal);
  const auto with = [&](const std::string& set) { return TrainConfig::load(path, {set}); };
  CHECK(TrainConfig::load(path, {}).training.devices == "cpu");
  CHECK(with("training.devices=cuda:1").training.devices == "cuda:1");
  for (const char* valid : {"cpu", "cpu:4", "cuda", "cuda:1", "cuda:0-7", "cuda:0,1,2,3", "all"}) {
    INFO(valid);
    CHECK_NOTHROW(with(std::string("training.devices=") + valid).validate());
  }
  CHECK_THROWS_WITH(with("training.devices=gpu").validate(),
                    Contains("training.devices 'gpu'") && Contains("'gpu' is not a device") && Contains("cpu:N"));
  CHECK_THROWS_WITH(with("training.devices=\"\"").validate(), Contains("'' is not a device"));

  using V = std::vector<Device>;
  const Device c0 = Device::cuda(0), c1 = Device::cuda(1), c2 = Device::cuda(2), c3 = Device::cuda(3);
  CHECK(parse_devices("cpu", 0) == V{Device::cpu()});
  CHECK(parse_devices("cpu:3", 0) == V(3, Device::cpu()));
  CHECK(parse_devices("cuda", 0) == V{c0});
  CHECK(parse_devices(" cuda:0 , cuda:3", 0) == V{c0, c3});
  CHECK(parse_devices("cuda:0-3", 0) == V{c0, c1, c2, c3});
  CHECK(parse_devices("cuda:0,1,3", 0) == V{c0, c1, c3});
  CHECK(parse_devices("cuda:2,0-1", 0) == V{c2, c0, c1});
  CHECK(parse_devices("all", 3) == V{c0, c1, c2});
  CHECK_THROWS_WITH(parse_devices("all", 0), Contains("no CUDA device is visible"));
  CHECK_THROWS_WITH(parse_devices("cuda:2,cuda:2", 4), Contains("cuda:2 is given twice"));
  CHECK_THROWS_WITH(parse_devices("cuda:0-2,1", 4), Contains("cuda:1 is given twice"));
  CHECK_THROWS_WITH(parse_devices("cuda:0,", 4), Contains("'' is not a CUDA device index"));
  CHECK_THROWS_WITH(parse_devices("cuda:3-1", 4), Contains("'cuda:3-1' is not a CUDA device index or range"));
  CHECK_THROWS_WITH(parse_devices("cpu:0", 4), Contains("'cpu:0' is not cpu or cpu:N"));
  CHECK_THROWS_WITH(parse_devices("cpu:2,cuda:0", 4), Contains("not mixed"));
  CHECK_THROWS_WITH(parse_devices("cuda:0,cpu", 4), Contains("given once, alone"));
  CHECK_THROWS_WITH(parse_devices("0,1", 4), Contains("'0' is not a device"));
}

TEST_CASE("train config: the shipped configs load and follow the paper", "[train]") {
  const std::string configs = std::string(DRAGOMAN_SOURCE_DIR) + "/configs/";
  const TrainConfig base = TrainConfig::load(configs + "transformer-base.yaml", {});
  CHECK(base.model.d_model == 512);
  CHECK(base.model.d_ff == 2048);
  CHECK(base.model.heads == 8);
  CHECK(base.model.encoder_layers == 6);
  CHECK(base.model.dropout == 0.1);
  CHECK(base.model.label_smoothing == 0.1);
  CHECK(base.training.max_tokens == 3125);
  CHECK(base.training.tokens_per_update == 25000);  // the paper's batch on any number of workers
  for (const std::int64_t workers : {1, 2, 4, 8}) {
    CHECK(resolve_accumulation(base.training, workers).update_freq * workers == 8);
  }
  CHECK(base.training.max_steps == 100000);
  CHECK(base.training.warmup_steps == 4000);
  // Checkpoints by updates: the paper's 10 minutes at 100,000 updates in 12 hours, on any hardware.
  CHECK(base.checkpoint.every_steps == 1390);
  CHECK(base.checkpoint.every_minutes == 0);
  const TrainConfig big = TrainConfig::load(configs + "transformer-big.yaml", {});
  CHECK(big.model.d_model == 1024);
  CHECK(big.model.d_ff == 4096);
  CHECK(big.model.heads == 16);
  CHECK(big.model.dropout == 0.3);
  CHECK(big.training.max_steps == 300000);
  CHECK(big.checkpoint.every_steps == 600);  // 10 minutes at 300,000 updates in 3.5 days
  for (const char* recipe : {"wmt14-en-de.yaml", "wmt14-en-fr.yaml", "tiny.yaml", "demo.yaml", "finetune.yaml"}) {
    const TrainConfig c = TrainConfig::load(configs + recipe, {});
    c.validate();
    // Their corpora are the repository's data/, from any working directory.
    const std::string data = (std::filesystem::path(DRAGOMAN_SOURCE_DIR) / "data").lexically_normal().string();
    INFO(recipe << ": " << c.data.train_source);
    CHECK(c.data.train_source.rfind(data + "/", 0) == 0);
    CHECK(c.data.valid_target.rfind(data + "/", 0) == 0);
  }
  // The fine-tuning template names no architecture: that is the model's (train --init).
  const TrainConfig finetune = TrainConfig::load(configs + "finetune.yaml", {});
  CHECK(finetune.model_keys_given == std::vector<std::string>{"dropout", "label_smoothing"});
  CHECK(finetune.training.lr_decay == "constant");
  const TrainConfig ende = TrainConfig::load(configs + "wmt14-en-de.yaml", {});
  CHECK(ende.data.vocab_size == 37000);
  CHECK(ende.model.d_model == 512);
  const TrainConfig enfr = TrainConfig::load(configs + "wmt14-en-fr.yaml", {});
  CHECK(enfr.data.vocab_type == "unigram");
  CHECK(enfr.data.vocab_size == 32000);
}

TEST_CASE("noam schedule: the paper's formula", "[train]") {
  // lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
  const double d = 512, w = 4000;
  for (const std::int64_t step : {1, 10, 100, 3999, 4000, 4001, 10000, 100000}) {
    const double s = static_cast<double>(step);
    const double expected = std::pow(d, -0.5) * std::min(std::pow(s, -0.5), s * std::pow(w, -1.5));
    CHECK(noam_learning_rate(step, 512, 4000, 1.0) == Approx(expected).epsilon(1e-14));
    CHECK(noam_learning_rate(step, 512, 4000, 2.0) == Approx(2 * expected).epsilon(1e-14));
  }
  // Peak at the end of warmup: (d_model * warmup)^-0.5 = 6.99e-4 for the base model; linear before.
  CHECK(noam_learning_rate(4000, 512, 4000, 1.0) == Approx(1.0 / std::sqrt(512.0 * 4000.0)));
  CHECK(noam_learning_rate(2000, 512, 4000, 1.0) == Approx(0.5 * noam_learning_rate(4000, 512, 4000, 1.0)));
  CHECK(noam_learning_rate(16000, 512, 4000, 1.0) == Approx(0.5 * noam_learning_rate(4000, 512, 4000, 1.0)));
  // The same curve given by its peak (training.lr): equal to Noam with the factor that has that peak.
  const double peak = noam_learning_rate(4000, 512, 4000, 1.0);
  for (const std::int64_t step : {1, 100, 3999, 4000, 4001, 10000, 100000}) {
    CHECK(inverse_sqrt_learning_rate(step, 4000, peak) ==
          Approx(noam_learning_rate(step, 512, 4000, 1.0)).epsilon(1e-12));
    CHECK(learning_rate(step, 512, 4000, peak, 1.0) == inverse_sqrt_learning_rate(step, 4000, peak));
    CHECK(learning_rate(step, 512, 4000, 0.0, 2.0) == noam_learning_rate(step, 512, 4000, 2.0));
  }
}

TEST_CASE("lr_decay linear and cosine: the warmup's ramp, then down to zero at max_steps", "[train]") {
  const double peak = 4e-3;
  for (const std::string decay : {"inverse_sqrt", "linear", "cosine"}) {
    INFO(decay);
    for (const std::int64_t step : {1, 150, 299, 300}) {  // the warmup: the same ramp for all
      CHECK(learning_rate(step, 128, 300, peak, 1.0, decay, 7000) == learning_rate(step, 128, 300, peak, 1.0));
    }
  }
  CHECK(learning_rate(7000, 128, 300, peak, 1.0, "inverse_sqrt", 7000) == inverse_sqrt_learning_rate(7000, 300, peak));
  // Linear: peak x (max_steps - step) / (max_steps - warmup); half-way at 3,650; zero at the end and after.
  CHECK(learning_rate(3650, 128, 300, peak, 1.0, "linear", 7000) == Approx(peak / 2));
  CHECK(learning_rate(6330, 128, 300, peak, 1.0, "linear", 7000) == Approx(peak * 670 / 6700));
  CHECK(learning_rate(7000, 128, 300, peak, 1.0, "linear", 7000) == 0.0);
  CHECK(learning_rate(7100, 128, 300, peak, 1.0, "linear", 7000) == 0.0);
  // Cosine: peak x (1 + cos(pi (step - warmup) / (max_steps - warmup))) / 2.
  CHECK(learning_rate(3650, 128, 300, peak, 1.0, "cosine", 7000) == Approx(peak / 2));
  CHECK(learning_rate(1975, 128, 300, peak, 1.0, "cosine", 7000) == Approx(peak * (1 + std::sqrt(0.5)) / 2));
  CHECK(learning_rate(7000, 128, 300, peak, 1.0, "cosine", 7000) == Approx(0.0).margin(1e-18));
  // From the paper's factor (training.lr unset): the Noam peak, then the decay.
  CHECK(learning_rate(4000 + 48000, 512, 4000, 0.0, 1.0, "linear", 100000) ==
        Approx(noam_learning_rate(4000, 512, 4000, 1.0) / 2));
}

TEST_CASE("training.lr_hold: the peak held for that fraction of the decay, then down to zero at max_steps", "[train]") {
  const double peak = 4e-3;
  for (const std::string decay : {"linear", "cosine"}) {
    INFO(decay);
    // Hold 0 is the schedule without a hold, to the bit.
    for (const std::int64_t step : {1, 300, 301, 2000, 6999, 7000}) {
      CHECK(learning_rate(step, 128, 300, peak, 1.0, decay, 7000, 0.0) ==
            learning_rate(step, 128, 300, peak, 1.0, decay, 7000));
    }
    // Hold 0.5 of the 6,700 updates after the warmup: the warmup's ramp, the peak to update 3,650,
    // then the decay over the last 3,350 (half-way at 5,325), zero at the end.
    CHECK(learning_rate(150, 128, 300, peak, 1.0, decay, 7000, 0.5) == learning_rate(150, 128, 300, peak, 1.0));
    for (const std::int64_t step : {300, 301, 2000, 3650}) {
      CHECK(learning_rate(step, 128, 300, peak, 1.0, decay, 7000, 0.5) == peak);
    }
    CHECK(learning_rate(3651, 128, 300, peak, 1.0, decay, 7000, 0.5) < peak);
    CHECK(learning_rate(5325, 128, 300, peak, 1.0, decay, 7000, 0.5) == Approx(peak / 2));
    CHECK(learning_rate(7000, 128, 300, peak, 1.0, decay, 7000, 0.5) == Approx(0.0).margin(1e-18));
  }
  CHECK(learning_rate(6330, 128, 300, peak, 1.0, "linear", 7000, 0.5) == Approx(peak * 670 / 3350));
}

TEST_CASE("training.lr_decay: checked when the config is loaded", "[train]") {
  const std::string dir = test::scratch_dir("config_lr_decay");
  const auto load = [&](const std::string& yaml, const std::vector<std::string>& overrides) {
    return TrainConfig::load(write_config(dir, "c.yaml", yaml), overrides);
  };
  CHECK(load(kMinimal, {}).training.lr_decay == "inverse_sqrt");
  const TrainConfig linear =
      load(kMinimal, {"training.lr_decay=linear", "training.max_steps=1000", "training.warmup_steps=100"});
  CHECK_NOTHROW(linear.validate());
  CHECK(linear.training.lr_decay == "linear");
  CHECK_THROWS_WITH(load(kMinimal, {"training.lr_decay=step"}).validate(),
                    Contains("training.lr_decay must be inverse_sqrt, constant, linear or cosine"));
  CHECK_THROWS_WITH(
      load(kMinimal, {"training.lr_decay=cosine", "training.max_steps=100", "training.warmup_steps=100"}).validate(),
      Contains("decays to zero at training.max_steps"));
  CHECK(load(kMinimal, {}).training.lr_hold == 0.0);
  CHECK(!load(kMinimal, {}).training.zero_init_residual);
  CHECK(load(kMinimal, {"training.zero_init_residual=true"}).training.zero_init_residual);
  CHECK(linear.training.lr_hold == 0.0);
  for (const char* bad : {"training.lr_hold=1", "training.lr_hold=-0.1", "training.lr_hold=nan"}) {
    INFO(bad);
    CHECK_THROWS_WITH(load(kMinimal, {bad}).validate(), Contains("training.lr_hold must be in [0, 1)"));
  }
  CHECK_THROWS_WITH(load(kMinimal, {"training.lr_hold=0.5"}).validate(), Contains("needs lr_decay linear or cosine"));
  CHECK_NOTHROW(load(kMinimal, {"training.lr_decay=linear", "training.max_steps=1000", "training.warmup_steps=100",
                                "training.lr_hold=0.5"})
                    .validate());
}

}  // namespace dragoman::train

namespace dragoman::train {
namespace {

TEST_CASE("train config: tokens_per_update derives the accumulation from the workers", "[train]") {
  TrainingConfig t;
  t.max_tokens = 3125;
  t.tokens_per_update = 25000;
  const Accumulation one = resolve_accumulation(t, 1);
  CHECK(one.derived);
  CHECK(one.update_freq == 8);
  CHECK(one.batches == 8);
  CHECK(one.tokens == 25000);
  CHECK(describe(one, t, 1) ==
        "25,000 tokens per update (training.tokens_per_update 25,000): 8 batches of at most 3,125 tokens "
        "(1 worker x update_freq 8)");
  CHECK(resolve_accumulation(t, 2).update_freq == 4);
  CHECK(resolve_accumulation(t, 8).update_freq == 1);
  // 3 workers: 9 batches (+12.5 %) is past the margin; the message names max_tokens that meet it.
  CHECK_THROWS_WITH(resolve_accumulation(t, 3),
                    Contains("cannot be met with training.max_tokens 3,125 on 3 workers") && Contains("+12 %") &&
                        Contains("set training.max_tokens to 2778 (update_freq 3: 25,002 tokens) or 2083"));
  // 16 GPUs: one batch each is already twice the paper's.
  CHECK_THROWS_WITH(resolve_accumulation(t, 16), Contains("update_freq 1, 50,000 tokens per update (+100 %") &&
                                                     Contains("set training.max_tokens to 1563"));
  // Within the margin: 7 workers x 1 = 21,875 (-12.5 %) is not, 2 x 3,000 x 4 = 24,000 (-4 %) is.
  CHECK_THROWS(resolve_accumulation(t, 7));
  t.max_tokens = 3000;
  CHECK(resolve_accumulation(t, 2).update_freq == 4);
  CHECK(resolve_accumulation(t, 2).tokens == 24000);
  // Not set: update_freq as given (0: 1), whatever the workers.
  TrainingConfig given;
  given.max_tokens = 1000;
  CHECK(resolve_accumulation(given, 4).update_freq == 1);
  CHECK(resolve_accumulation(given, 4).batches == 4);
  CHECK_FALSE(resolve_accumulation(given, 4).derived);
  given.update_freq = 3;
  CHECK(resolve_accumulation(given, 2).batches == 6);
  CHECK(describe(resolve_accumulation(given, 2), given, 2) ==
        "6,000 tokens per update: 6 batches of at most 1,000 tokens (2 workers x update_freq 3)");
}

}  // namespace
}  // namespace dragoman::train
