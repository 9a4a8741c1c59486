// convert/model_format: which importer reads a model, told from the input (the fixtures of
// tests/fixtures/marian and small files made here), and --from checked against it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "base/error.h"
#include "convert/convert_testing.h"
#include "convert/model_format.h"
#include "train/train_testing.h"

namespace dragoman::convert {
namespace {

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

}  // namespace

TEST_CASE("detect_model_format tells a MarianMT directory from a Marian model", "[convert]") {
  const fs::path hf = test::kMarianFixtures / "hf-tiny", marian = test::kMarianFixtures / "marian-tiny";
  const DetectedModel a = detect_model_format(hf.string());
  CHECK(a.format == ModelFormat::kHfMarian);
  CHECK(a.path == hf.string());
  CHECK_THAT(a.reason, Contains("config.json"));
  const DetectedModel b = detect_model_format(marian.string());  // a directory: its decoder.yml
  CHECK(b.format == ModelFormat::kMarian);
  CHECK(b.path == (marian / "decoder.yml").string());
  CHECK(detect_model_format((marian / "decoder.yml").string()).format == ModelFormat::kMarian);
  const DetectedModel npz = detect_model_format((marian / "model.npz").string());
  CHECK(npz.format == ModelFormat::kMarian);
  CHECK(npz.path == (marian / "model.npz").string());

  const std::string dir = test::scratch_dir("model_format");
  // A directory with one .npz and no decoder.yml: that archive; an .npz under another name: by its
  // zip signature.
  fs::create_directories(dir + "/one");
  fs::copy_file(marian / "model.npz", dir + "/one/weights.npz");
  CHECK(detect_model_format(dir + "/one").path == dir + "/one/weights.npz");
  fs::copy_file(marian / "model.npz", dir + "/model.bin");
  CHECK(detect_model_format(dir + "/model.bin").format == ModelFormat::kMarian);
  // Neither: errors that say what was expected.
  fs::copy_file(marian / "model.npz", dir + "/one/other.npz");
  CHECK_THROWS_WITH(detect_model_format(dir + "/one"), Contains("2 .npz files (name the model's .npz)"));
  fs::create_directories(dir + "/empty");
  CHECK_THROWS_WITH(detect_model_format(dir + "/empty"), Contains("neither config.json") && Contains("or a .npz"));
  CHECK_THROWS_WITH(detect_model_format((test::kMarianFixtures / "input.en").string()),
                    Contains("cannot tell the model's format") && Contains("--from"));
}

TEST_CASE("model_format_as: --from that does not match the input names the likely mistake", "[convert]") {
  const fs::path hf = test::kMarianFixtures / "hf-tiny", marian = test::kMarianFixtures / "marian-tiny";
  CHECK(model_format_as(hf.string(), ModelFormat::kHfMarian).format == ModelFormat::kHfMarian);
  CHECK(model_format_as(marian.string(), ModelFormat::kMarian).path == (marian / "decoder.yml").string());
  CHECK_THROWS_WITH(model_format_as(hf.string(), ModelFormat::kMarian),
                    Contains("config.json") && Contains("not --from marian: use --from hf, or leave --from out"));
  CHECK_THROWS_WITH(model_format_as((marian / "model.npz").string(), ModelFormat::kHfMarian),
                    Contains("not --from hf: use --from marian"));
  // What is not recognised goes to the importer named, which says what is wrong with it.
  const DetectedModel forced = model_format_as((test::kMarianFixtures / "input.en").string(), ModelFormat::kMarian);
  CHECK(forced.format == ModelFormat::kMarian);
  CHECK(forced.path == (test::kMarianFixtures / "input.en").string());
  CHECK(std::string(model_format_name(ModelFormat::kHfMarian)) == "hf");
  CHECK(std::string(model_format_name(ModelFormat::kMarian)) == "marian");
}

}  // namespace dragoman::convert
