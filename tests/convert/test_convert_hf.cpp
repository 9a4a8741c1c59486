// dragoman convert --from hf: a MarianMT model written by transformers (tests/fixtures/marian,
// make_hf_fixture.py: save_pretrained, then generate()) becomes a Dragoman model file whose
// encoding, greedy and beam-4 translations and log-probabilities are transformers' own; and what
// Dragoman cannot represent is refused by name.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "convert/convert_testing.h"
#include "convert/hf_marian.h"
#include "decode/model_files.h"
#include "decode/translator.h"
#include "io/read_file.h"
#include "io/safetensors.h"
#include "train/train_testing.h"

namespace dragoman::convert {
namespace {

namespace fs = std::filesystem;
using test::scratch_dir;
using test::write_text;
const fs::path& kFixtures = test::kMarianFixtures;
using test::read_json_file;
using test::read_lines;

// The converted fixture model in a scratch directory.
std::string converted(const std::string& name) {
  const std::string out = scratch_dir("convert_" + name) + "/model.safetensors";
  write_imported_model(read_hf_marian((kFixtures / name).string()), out, name);
  return out;
}

decode::TranslatorOptions search(int beam) {
  decode::TranslatorOptions o;
  o.search.beam = beam;
  o.search.length_penalty = decode::LengthPenalty::kPower;  // generate()'s score / |Y|^0.6
  o.search.alpha = 0.6;
  return o;
}

}  // namespace

TEST_CASE("convert hf: MarianMT's encoding, greedy and beam-4 translations and log-probabilities", "[convert]") {
  const nlohmann::json expected = read_json_file(kFixtures / "hf-tiny-expected.json");
  const decode::DecodingModels models = decode::load_decoding_models({converted("hf-tiny")}, "fp32", Device::cpu());
  const model::ModelConfig& c = models.models.front()->config();
  CHECK(c.activation == model::Activation::kSwish);
  CHECK(c.sinusoids == ops::SinusoidLayout::kConcatenated);
  CHECK(c.output_bias);
  CHECK(c.bos_id == c.pad_id);  // decoding starts from <pad>
  const std::vector<std::string> lines = read_lines(kFixtures / "input.en");
  REQUIRE(lines.size() == expected["lines"].size());
  const text::Vocabulary& vocabulary = *models.vocabulary;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO("line " << i);
    CHECK(vocabulary.encode(lines[i]) == expected["lines"][i]["source_ids"].get<std::vector<std::int32_t>>());
  }
  // A leading language token (multilingual models) is one id, as MarianTokenizer gives it (these
  // ids are its own: the fixture's table has no >>deu<<, so unk).
  CHECK(vocabulary.encode(">>deu<< The package") == std::vector<std::int32_t>{1, 86, 54, 0});
  CHECK(vocabulary.encode(">>x<< <<y The package") == std::vector<std::int32_t>{1, 2, 123, 123, 18, 86, 54, 0});
  for (const auto& [name, beam] : {std::pair{"greedy", 1}, std::pair{"beam4", 4}}) {
    const decode::Translator translator(models.decoding(), vocabulary, search(beam));
    const std::vector<decode::Translation> out = translator.translate(lines);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      INFO(name << " line " << i);
      const nlohmann::json& e = expected["lines"][i][name];
      const decode::TranslatedHypothesis& h = out[i].nbest.front();
      CHECK(h.tokens == e["ids"].get<std::vector<std::int32_t>>());
      CHECK(h.text == e["text"].get<std::string>());
      if (e.contains("log_probs")) {
        const std::vector<double> lp = e["log_probs"].get<std::vector<double>>();
        REQUIRE(h.token_log_probs.size() == lp.size());
        for (std::size_t t = 0; t < lp.size(); ++t) CHECK(h.token_log_probs[t] == Approx(lp[t]).margin(2e-4));
      }
    }
  }
}

TEST_CASE("convert hf: pytorch_model.bin gives the model of model.safetensors", "[convert]") {
  const std::string dir = scratch_dir("convert_hf_bin") + "/model";
  fs::copy(kFixtures / "hf-tiny", dir, fs::copy_options::recursive);
  fs::remove(fs::path(dir) / "model.safetensors");
  const std::string from_bin = dir + "/../bin.safetensors";
  write_imported_model(read_hf_marian(dir), from_bin, dir);
  const io::SafeTensorsFile a = io::read_safetensors(from_bin), b = io::read_safetensors(converted("hf-tiny"));
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    INFO(a.tensors[i].name);
    CHECK(a.tensors[i].name == b.tensors[i].name);
    CHECK(a.tensors[i].data == b.tensors[i].data);
  }
}

TEST_CASE("convert hf: what Dragoman cannot represent is refused by name", "[convert]") {
  const std::string dir = scratch_dir("convert_hf_refused") + "/model";
  const auto fresh_copy = [&] {
    fs::remove_all(dir);
    fs::copy(kFixtures / "hf-tiny", dir, fs::copy_options::recursive);
  };
  const auto edit_config = [&](const std::string& key, const nlohmann::json& value) {
    nlohmann::json config = read_json_file(fs::path(dir) / "config.json");
    config[key] = value;
    write_text(dir + "/config.json", config.dump());
  };
  fresh_copy();
  edit_config("activation_function", "gelu");
  CHECK_THROWS_WITH(read_hf_marian(dir), Catch::Contains("'activation_function' \"gelu\""));
  fresh_copy();
  edit_config("decoder_ffn_dim", 128);
  CHECK_THROWS_WITH(read_hf_marian(dir), Catch::Contains("'decoder_ffn_dim'"));
  fresh_copy();
  edit_config("normalize_before", true);
  CHECK_THROWS_WITH(read_hf_marian(dir), Catch::Contains("'normalize_before'"));
  fresh_copy();
  edit_config("model_type", "bart");
  CHECK_THROWS_WITH(read_hf_marian(dir), Catch::Contains("only MarianMT models"));
  fresh_copy();
  edit_config("d_model", 64);  // the tensors no longer fit the config
  CHECK_THROWS_WITH(write_imported_model(read_hf_marian(dir), dir + "/out.safetensors", "m"), Catch::Contains("shape"));
  fresh_copy();
  nlohmann::json vocab = read_json_file(fs::path(dir) / "vocab.json");
  vocab["<extra>"] = vocab.size() + 5;  // an id past the end: the ids are not dense
  write_text(dir + "/vocab.json", vocab.dump());
  CHECK_THROWS_WITH(read_hf_marian(dir), Catch::Contains("vocab.json") && Catch::Contains("'<extra>'"));
  fresh_copy();
  fs::remove(fs::path(dir) / "model.safetensors");
  fs::remove(fs::path(dir) / "pytorch_model.bin");
  CHECK_THROWS_WITH(read_hf_marian(dir), Catch::Contains("no model.safetensors or pytorch_model.bin"));
  CHECK_FALSE(fs::exists(dir + "/out.safetensors"));
}

}  // namespace dragoman::convert
