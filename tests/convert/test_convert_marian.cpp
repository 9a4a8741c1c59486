// dragoman convert --from marian: a Marian model.npz (tests/fixtures/marian, make_marian_fixture.py:
// Marian's parameter names and config) becomes a Dragoman model file that translates as
// transformers' generate() does on the same weights (the Hugging Face conversion of the model) and
// as CTranslate2 does (their sinusoids: the default), and, with --sinusoids tensor2tensor, as Marian
// itself does (pymarian: greedy and beam 4, scores). Where the length cap is reached Marian and
// CTranslate2 differ from Dragoman by design (they stop without </s>, Dragoman ends with it), so
// their beam search is compared on the lines whose best hypothesis ends before the cap; greedy, and
// transformers' (given Dragoman's cap), on every line.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "convert/convert_testing.h"
#include "convert/marian_npz.h"
#include "decode/model_files.h"
#include "decode/translator.h"
#include "io/read_file.h"
#include "train/train_testing.h"

namespace dragoman::convert {
namespace {

namespace fs = std::filesystem;
using test::scratch_dir;
using test::write_text;
const fs::path& kFixtures = test::kMarianFixtures;
using test::read_json_file;
using test::read_lines;

std::string converted(const MarianInputs& inputs, const std::string& name) {
  const std::string out = scratch_dir("convert_marian_" + name) + "/model.safetensors";
  write_imported_model(read_marian(inputs), out, inputs.model);
  return out;
}

// Marian's "0 ||| pieces ||| F0= score ||| normalised" line: the F0 score.
double marian_score(const std::string& raw) {
  const std::size_t at = raw.find("F0=");
  REQUIRE(at != std::string::npos);
  return std::stod(raw.substr(at + 3));
}

void check_translations(const std::string& model_file, const std::string& reference) {
  const nlohmann::json expected = read_json_file(kFixtures / "marian-tiny-expected.json");
  const decode::DecodingModels models = decode::load_decoding_models({model_file}, "fp32", Device::cpu());
  const text::Vocabulary& vocabulary = *models.vocabulary;
  const std::vector<std::string> lines = read_lines(kFixtures / "input.en");
  REQUIRE(lines.size() == expected["lines"].size());
  int compared_beam = 0;
  for (const auto& [name, beam] : {std::pair{"greedy", 1}, std::pair{"beam4", 4}}) {
    decode::TranslatorOptions o;
    o.search.beam = beam;
    o.search.length_penalty = decode::LengthPenalty::kPower;  // Marian's --normalize 0.6, CTranslate2's length_penalty
    o.search.alpha = 0.6;
    const std::vector<decode::Translation> out = decode::Translator(models.decoding(), vocabulary, o).translate(lines);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      INFO(reference << " " << name << " line " << i);
      const nlohmann::json& e = expected["lines"][i];
      const auto cap = static_cast<std::size_t>(e["source_pieces"].size() + 1 + 50);  // L, </s> counted in |x|
      const decode::TranslatedHypothesis& h = out[i].nbest.front();
      std::vector<std::string> pieces;
      for (const std::int32_t id : h.tokens) pieces.push_back(vocabulary.piece(id));
      const std::vector<std::string> theirs = e[reference][name]["pieces"].get<std::vector<std::string>>();
      const bool same_caps = reference == "transformers";
      if (!same_caps && beam > 1 && (theirs.size() >= cap || pieces.size() >= cap)) continue;  // see the header
      compared_beam += beam > 1 ? 1 : 0;
      CHECK(pieces == theirs);
      if (reference == "marian" && pieces == theirs) {
        // Marian's score: the log-probabilities of the tokens (and of </s> unless the cap was reached).
        const double ours = pieces.size() >= cap ? h.log_prob - h.token_log_probs.back() : h.log_prob;
        CHECK(ours == Approx(marian_score(e["marian"][name]["raw"].get<std::string>())).epsilon(1e-5));
      }
    }
  }
  CHECK(compared_beam >= 12);  // most lines end before the cap
}

}  // namespace

TEST_CASE("convert marian: with Marian's sinusoids, translations and scores are Marian's own", "[convert]") {
  const std::string file = converted(
      {(kFixtures / "marian-tiny" / "decoder.yml").string(), {}, {}, ops::SinusoidLayout::kTensor2Tensor}, "marian");
  const model::ModelConfig c = decode::load_decoding_models({file}, "fp32", Device::cpu()).models.front()->config();
  CHECK(c.sinusoids == ops::SinusoidLayout::kTensor2Tensor);
  CHECK(c.layer_norm_eps == 1e-6);
  CHECK(c.activation == model::Activation::kSwish);
  check_translations(file, "marian");
}

TEST_CASE("convert marian: by default, translations are transformers' and CTranslate2's", "[convert]") {
  const fs::path dir = kFixtures / "marian-tiny";
  const MarianInputs inputs{(dir / "model.npz").string(),
                            {(dir / "vocab.yml").string()},
                            {(dir / "source.spm").string(), (dir / "target.spm").string()}};
  const std::string file = converted(inputs, "default");
  CHECK(decode::load_decoding_models({file}, "fp32", Device::cpu()).models.front()->config().sinusoids ==
        ops::SinusoidLayout::kConcatenated);
  check_translations(file, "transformers");
  check_translations(file, "ctranslate2");
}

TEST_CASE("convert marian: settings Dragoman cannot represent are refused by name", "[convert]") {
  // The settings of a small model, one of them replaced or added by `more` ("key: value").
  const auto config = [&](const std::string& more) {
    std::map<std::string, std::string> settings = {{"type", "transformer"},
                                                   {"dim-emb", "32"},
                                                   {"enc-depth", "2"},
                                                   {"dec-depth", "2"},
                                                   {"transformer-heads", "4"},
                                                   {"transformer-dim-ffn", "64"},
                                                   {"transformer-ffn-activation", "swish"}};
    std::string yaml = more;
    for (const auto& [key, value] : settings) {
      if (more.find(key + ":") == std::string::npos) yaml += key + ": " + value + "\n";
    }
    return marian_model_config(yaml, "model.yml", ops::SinusoidLayout::kTensor2Tensor);
  };
  const model::ModelConfig c = config("");
  CHECK(c.d_model == 32);
  CHECK(c.heads == 4);
  CHECK(c.norm == model::NormPlacement::kPost);
  CHECK(config("transformer-preprocess: n\ntransformer-postprocess: da\ntransformer-postprocess-top: n\n").norm ==
        model::NormPlacement::kPre);
  CHECK(config("transformer-ffn-activation: relu\n").activation == model::Activation::kRelu);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"type: s2s\n", "'type' = 's2s'"},
      {"transformer-ffn-activation: gelu\n", "'transformer-ffn-activation' = 'gelu'"},
      {"transformer-decoder-autoreg: average-attention\n", "'transformer-decoder-autoreg'"},
      {"transformer-postprocess-emb: dn\n", "'transformer-postprocess-emb' = 'dn'"},
      {"transformer-preprocess: n\n", "'transformer-preprocess'"},
      {"transformer-ffn-depth: 3\n", "'transformer-ffn-depth' = '3'"},
      {"transformer-decoder-dim-ffn: 128\n", "'transformer-decoder-dim-ffn'"},
      {"transformer-train-position-embeddings: true\n", "'transformer-train-position-embeddings'"},
      {"right-left: true\n", "'right-left'"},
      {"transformer-tied-layers: [1, 1]\n", "'transformer-tied-layers'"},
      {"lemma-dim-emb: 8\n", "'lemma-dim-emb'"},
  };
  for (const auto& [more, message] : refused) {
    INFO(more);
    CHECK_THROWS_WITH(config(more), Catch::Contains("model.yml") && Catch::Contains(message));
  }
}

TEST_CASE("convert marian: bad vocabularies and inputs are refused by name", "[convert]") {
  const std::string dir = scratch_dir("convert_marian_refused");
  const fs::path fixture = kFixtures / "marian-tiny";
  // A vocabulary that does not fit the embeddings.
  write_text(dir + "/vocab.yml", "</s>: 0\n<unk>: 1\na: 2\n");
  CHECK_THROWS_WITH(read_marian({(fixture / "model.npz").string(),
                                 {dir + "/vocab.yml"},
                                 {(fixture / "source.spm").string(), (fixture / "target.spm").string()}}),
                    Catch::Contains("'Wemb'") && Catch::Contains("the vocabulary's size"));
  // A vocabulary without </s>.
  const std::vector<std::string> spms = {(fixture / "source.spm").string(), (fixture / "target.spm").string()};
  write_text(dir + "/vocab.yml", "<unk>: 0\na: 1\n");
  CHECK_THROWS_WITH(read_marian({(fixture / "model.npz").string(), {dir + "/vocab.yml"}, spms}),
                    Catch::Contains("no '</s>'"));
  // Ids that are not 0..n-1.
  write_text(dir + "/vocab.yml", "</s>: 0\n<unk>: 3\n");
  CHECK_THROWS_WITH(read_marian({(fixture / "model.npz").string(), {dir + "/vocab.yml"}, spms}),
                    Catch::Contains("'<unk>' has 3"));
  // No SentencePiece models beside the vocabulary, and none given.
  write_text(dir + "/vocab.yml", "</s>: 0\n<unk>: 1\n");
  CHECK_THROWS_WITH(read_marian({(fixture / "model.npz").string(), {dir + "/vocab.yml"}, {}}),
                    Catch::Contains("no source.spm") && Catch::Contains("--spm"));
  // A decoder.yml naming an ensemble.
  write_text(dir + "/decoder.yml", "models: [a.npz, b.npz]\nvocabs: [v.yml, v.yml]\n");
  CHECK_THROWS_WITH(read_marian({dir + "/decoder.yml", {}, {}}), Catch::Contains("'models' must name one model"));
}

}  // namespace dragoman::convert
