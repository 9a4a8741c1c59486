// Model files: save -> load is bit-exact (parameters, config, vocabulary, step, metadata), writes
// are atomic, and every way a file can be wrong (not a model, another format version, a config
// that does not match the tensors, truncated or corrupted bytes) is a clear error naming the file.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "model/model_testing.h"
#include "train/train_testing.h"

namespace dragoman::model {
namespace {

// This process's scratch directory (removed when it exits; made again after a test removed it).
std::filesystem::path temp_dir() {
  static const std::filesystem::path dir = test::scratch_dir("checkpoint");
  std::filesystem::create_directories(dir);
  return dir;
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("A saved model loads back bit for bit", "[model]") {
  const auto dir = temp_dir();
  for (const std::string& name : test::kFixtureCases) {
    SECTION(name) {
      Transformer model(test::fixture_config(name), DType::kF32);
      model.initialize(17);
      ModelFileInfo info;
      info.step = 12345;
      info.vocabulary = std::string("\x00\x01 sentencepiece bytes \xff", 24);
      info.metadata["note"] = "hello";
      const auto path = dir / (name + ".safetensors");
      save_model(path.string(), model, info);
      ModelFileInfo loaded_info;
      const Transformer loaded = load_model(path.string(), DType::kF32, &loaded_info);
      CHECK(loaded.config() == model.config());
      CHECK(loaded.parameters().values().to_vector<float>() == model.parameters().values().to_vector<float>());
      CHECK(loaded_info.step == 12345);
      CHECK(loaded_info.vocabulary == info.vocabulary);
      CHECK(loaded_info.metadata == info.metadata);
      // No temporary file is left beside it.
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        CHECK(entry.path().extension() == ".safetensors");
      }
      // numpy/safetensors readers see our names: every parameter is a tensor of the file.
      const io::SafeTensorsFile file = io::read_safetensors(path.string());
      CHECK(file.find("decoder.layers.0.cross_attn.q_proj.weight") != nullptr);
      CHECK(file.metadata.at("format") == "dragoman-model");
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("Model files that do not match are refused with the reason", "[model]") {
  const ModelConfig config = test::fixture_config("post_shared_tied");
  Transformer model(config, DType::kF32);
  model.initialize(1);
  const io::SafeTensorsFile good = model_to_safetensors(model, {});
  const auto load = [](const io::SafeTensorsFile& file) {
    return model_from_safetensors(file, "m.safetensors", DType::kF32);
  };
  CHECK_NOTHROW(load(good));

  io::SafeTensorsFile f = good;
  f.metadata["format"] = "something-else";
  CHECK_THROWS_WITH(load(f), Catch::Contains("m.safetensors: not a Dragoman model file"));
  f = good;
  f.metadata.erase("model_config");
  CHECK_THROWS_WITH(load(f), Catch::Contains("no 'model_config'"));
  f = good;
  f.metadata["format_version"] = "2";
  CHECK_THROWS_WITH(load(f), Catch::Contains("model format version 2 is not supported"));
  f = good;
  f.metadata["model_config"] = "{\"d_model\": ";
  CHECK_THROWS_WITH(load(f), Catch::Contains("model_config is not valid JSON"));
  f = good;
  f.metadata["step"] = "-3";
  CHECK_THROWS_WITH(load(f), Catch::Contains("'step' is not a non-negative integer"));
  f = good;
  f.tensors.pop_back();
  CHECK_THROWS_WITH(load(f), Catch::Contains("missing parameter"));
  f = good;
  f.tensors[0].shape = {f.tensors[0].shape[1], f.tensors[0].shape[0]};
  CHECK_THROWS_WITH(load(f), Catch::Contains("has shape [16, 23], the config needs [23, 16]"));
  f = good;
  f.tensors.push_back({"output.weight", DType::kF32, {23, 16}, std::vector<unsigned char>(23 * 16 * 4)});
  CHECK_THROWS_WITH(load(f), Catch::Contains("unexpected tensor 'output.weight'"));
  f = good;
  f.tensors[0].dtype = DType::kI32;
  CHECK_THROWS_WITH(load(f), Catch::Contains("expected F32, F64, BF16 or F16"));

  // A config whose sizes the file cannot back is refused before anything is allocated by it
  // (2^30 layers once took a translate run to 24 GB and the OOM killer).
  const auto with_config = [&](const std::function<void(nlohmann::json&)>& change) {
    io::SafeTensorsFile changed = good;
    nlohmann::json json = nlohmann::json::parse(changed.metadata["model_config"]);
    change(json);
    changed.metadata["model_config"] = json.dump();
    return changed;
  };
  CHECK_THROWS_WITH(
      load(with_config([](nlohmann::json& c) { c["encoder_layers"] = std::int64_t{1} << 30; })),
      Catch::Contains("model_config has 1073741824 + ") && Catch::Contains("layers, but the file holds only"));
  CHECK_THROWS_WITH(load(with_config([](nlohmann::json& c) {
                      c["d_model"] = std::int64_t{1} << 20;
                      c["d_ff"] = std::int64_t{1} << 22;
                    })),
                    Catch::Contains("the config needs [") && Catch::Contains("1048576"));
  CHECK_THROWS_WITH(load(with_config([](nlohmann::json& c) {
                      c["src_vocab_size"] = std::int64_t{1} << 40;
                      c["tgt_vocab_size"] = std::int64_t{1} << 40;
                    })),
                    Catch::Contains("the config needs [1099511627776, 16]"));
}

TEST_CASE("Truncated or corrupted model files are errors, never crashes", "[model]") {
  const auto dir = temp_dir();
  Transformer model(test::fixture_config("post_tied_only"), DType::kF32);
  model.initialize(1);
  const auto path = dir / "model.safetensors";
  save_model(path.string(), model, {});
  const std::string bytes = read_bytes(path);
  const auto bad = dir / "bad.safetensors";
  for (const std::size_t keep :
       {std::size_t{0}, std::size_t{5}, std::size_t{8}, std::size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    INFO("truncated to " << keep << " bytes");
    write_bytes(bad, bytes.substr(0, keep));
    CHECK_THROWS_WITH(load_model(bad.string()), Catch::Contains(bad.string()));
  }
  std::string corrupted = bytes;
  corrupted[20] = '\x7f';  // inside the JSON header
  write_bytes(bad, corrupted);
  CHECK_THROWS_WITH(load_model(bad.string()), Catch::Contains(bad.string()));
  CHECK_THROWS_WITH(load_model((dir / "missing.safetensors").string()), Catch::Contains("missing.safetensors"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("A model file holding NaN or infinity is refused, naming the tensor", "[model]") {
  const auto dir = temp_dir();
  Transformer model(test::fixture_config("post_tied_only"), DType::kF32);
  model.initialize(1);
  const io::SafeTensorsFile good = model_to_safetensors(model, {});
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    io::SafeTensorsFile f = good;
    io::SafeTensor& t = f.tensors.back();
    std::memcpy(t.data.data() + 4 * 3, &bad, 4);  // element 3
    const auto path = dir / "nan.safetensors";
    io::write_safetensors(path.string(), f);
    CHECK_THROWS_WITH(load_model(path.string()), Catch::Contains(path.string()) &&
                                                     Catch::Contains("tensor '" + t.name + "'") &&
                                                     Catch::Contains("non-finite") && Catch::Contains("element 3"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("Model files store BF16 or F16 weights (rounded) and load them back exactly widened", "[model]") {
  const auto dir = temp_dir();
  Transformer model(test::fixture_config("post_tied_only"), DType::kF32);
  model.initialize(3);
  const std::vector<float> weights = model.parameters().values().to_vector<float>();
  for (const DType dtype : {DType::kBF16, DType::kF16}) {
    INFO(dtype_name(dtype));
    const auto path = dir / "half.safetensors";
    save_model(path.string(), model, {}, dtype);
    const io::SafeTensorsFile file = io::read_safetensors(path.string());
    CHECK(file.tensors[0].dtype == dtype);
    CHECK(file.tensors[0].data.size() == static_cast<std::size_t>(file.tensors[0].numel()) * 2);
    const std::vector<float> loaded = load_model(path.string()).parameters().values().to_vector<float>();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      const float expected =
          dtype == DType::kBF16 ? bf16::from_float(weights[i]).to_float() : f16::from_float(weights[i]).to_float();
      wrong += loaded[i] != expected;
    }
    CHECK(wrong == 0);
    // A 16-bit infinity in a file is refused like a float32 one.
    io::SafeTensorsFile bad = file;
    const std::uint16_t inf = dtype == DType::kBF16 ? 0x7F80 : 0x7C00;
    std::memcpy(bad.tensors[1].data.data() + 2 * 7, &inf, 2);
    CHECK_THROWS_WITH(model_from_safetensors(bad, "bad", DType::kF32),
                      Catch::Contains("'" + bad.tensors[1].name + "'") && Catch::Contains("element 7"));
  }
  CHECK_THROWS_WITH(save_model((dir / "i32.safetensors").string(), model, {}, DType::kI32), Catch::Contains("I32"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("A float64 model saves float64 tensors and loads into float32 by conversion", "[model]") {
  const auto dir = temp_dir();
  Transformer model(test::fixture_config("post_tied_only"), DType::kF64);
  model.initialize(4);
  const auto path = dir / "f64.safetensors";
  save_model(path.string(), model, {});
  CHECK(io::read_safetensors(path.string()).tensors[0].dtype == DType::kF64);
  const Transformer as_f64 = load_model(path.string(), DType::kF64);
  CHECK(as_f64.parameters().values().to_vector<double>() == model.parameters().values().to_vector<double>());
  const Transformer as_f32 = load_model(path.string(), DType::kF32);
  CHECK(as_f32.parameters().values().to_vector<float>() ==
        model.parameters().values().to(DType::kF32).to_vector<float>());
  std::filesystem::remove_all(dir);
}

}  // namespace dragoman::model
