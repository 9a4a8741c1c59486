// The decoding options translate, serve and score share (decode/decoding_options.h): the built-in
// defaults are the paper's search and the documented batch sizes, the search and batch structs
// take theirs from the same constants, a server differs only where the header says so, and a model
// file's recommended settings fill exactly the options the command line left.
#include <catch2/catch.hpp>

#include <filesystem>

#include "base/error.h"
#include "decode/decode_testing.h"
#include "decode/decoding_options.h"
#include "decode/model_files.h"
#include "decode/translator.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "train/train_testing.h"

namespace dragoman::decode {
namespace {

TEST_CASE("decoding options default to the paper's search, the same as SearchOptions'", "[decode]") {
  const DecodingOptions o;
  const SearchOptions s = o.search_options();
  CHECK(s.beam == 4);
  CHECK(s.alpha == 0.6);
  CHECK(s.length_penalty == LengthPenalty::kGnmt);
  CHECK(o.length_normalization == "gnmt");
  CHECK(s.word_reward == 0.0);
  CHECK(s.max_length_a == 1.0);
  CHECK(s.max_length_b == 50);
  CHECK(s.nbest == 1);
  CHECK_FALSE(s.record_attention);
  const SearchOptions plain;
  CHECK(plain.beam == s.beam);
  CHECK(plain.alpha == s.alpha);
  CHECK(plain.length_penalty == s.length_penalty);
  CHECK(plain.word_reward == s.word_reward);
  CHECK(plain.max_length_a == s.max_length_a);
  CHECK(plain.max_length_b == s.max_length_b);
  CHECK(o.device == "cpu");
  CHECK(o.precision == "fp32");
  CHECK(o.threads == 0);
}

TEST_CASE("decoding options carry every search setting given into SearchOptions", "[decode]") {
  DecodingOptions o;
  o.beam = 7;
  o.length_penalty = 1.5;
  o.length_normalization = "power";
  o.word_reward = -0.25;
  o.max_length_a = 2.0;
  o.max_length_b = 3;
  const SearchOptions s = o.search_options();
  CHECK(s.beam == 7);
  CHECK(s.alpha == 1.5);
  CHECK(s.length_penalty == LengthPenalty::kPower);
  CHECK(s.word_reward == -0.25);
  CHECK(s.max_length_a == 2.0);
  CHECK(s.max_length_b == 3);
  o.length_normalization = "none";
  CHECK(o.search_options().length_penalty == LengthPenalty::kNone);
  o.length_normalization = "gnmt ";
  CHECK_THROWS_AS(o.search_options(), Error);
}

TEST_CASE("length normalisation names round-trip", "[decode]") {
  for (const LengthPenalty p : {LengthPenalty::kGnmt, LengthPenalty::kPower, LengthPenalty::kNone}) {
    CHECK(length_penalty_named(length_penalty_name(p)) == p);
  }
  CHECK_THROWS_WITH(length_penalty_named("GNMT"), Catch::Contains("not one of gnmt, power, none"));
}

TEST_CASE("batch sizes default by device, a server's CPU searches hold fewer sentences", "[decode]") {
  const DecodingOptions o;
  const Device cpu = Device::cpu(), gpu = Device::cuda(0);
  const TranslatorOptions batch_cpu = o.translator_options(cpu, DecodingUse::kBatch);
  CHECK(batch_cpu.batch_tokens == 2048);
  CHECK(batch_cpu.batch_sentences == 64);
  const TranslatorOptions batch_gpu = o.translator_options(gpu, DecodingUse::kBatch);
  CHECK(batch_gpu.batch_tokens == 16384);
  CHECK(batch_gpu.batch_sentences == 1024);
  const TranslatorOptions server_cpu = o.translator_options(cpu, DecodingUse::kServer);
  CHECK(server_cpu.batch_tokens == 2048);
  CHECK(server_cpu.batch_sentences == kServeCpuBatchSentences);
  CHECK(kServeCpuBatchSentences == 32);
  const TranslatorOptions server_gpu = o.translator_options(gpu, DecodingUse::kServer);
  CHECK(server_gpu.batch_tokens == 16384);
  CHECK(server_gpu.batch_sentences == 1024);
  // The batch translator's own defaults are the CPU's, for_device's the device's.
  const TranslatorOptions plain;
  CHECK(plain.batch_tokens == batch_cpu.batch_tokens);
  CHECK(plain.batch_sentences == batch_cpu.batch_sentences);
  CHECK(TranslatorOptions::for_device(gpu).batch_sentences == batch_gpu.batch_sentences);
  CHECK(batch_cpu.search.beam == o.beam);
}

TEST_CASE("batch sizes given win on every device and for every use", "[decode]") {
  DecodingOptions o;
  o.batch_tokens = 300;
  o.batch_sentences = 5;
  for (const Device& device : {Device::cpu(), Device::cuda(1)}) {
    for (const DecodingUse use : {DecodingUse::kBatch, DecodingUse::kServer}) {
      const TranslatorOptions t = o.translator_options(device, use);
      CHECK(t.batch_tokens == 300);
      CHECK(t.batch_sentences == 5);
    }
  }
}

TEST_CASE("a server's beam is limited below translate's", "[decode]") {
  CHECK(max_beam(DecodingUse::kBatch) == kMaxBeam);
  CHECK(max_beam(DecodingUse::kServer) == kMaxServeBeam);
  CHECK(kMaxServeBeam < kMaxBeam);
}

TEST_CASE("a model file's recommended settings fill only the options not given", "[decode]") {
  DecodingDefaults recommended;
  recommended.beam = 6;
  recommended.alpha = 1.0;
  recommended.normalization = "power";

  SECTION("nothing given: all three from the model file") {
    DecodingOptions o;
    const SearchOrigins origins = apply_model_defaults(recommended, o);
    CHECK(origins.any_from_model());
    CHECK(describe_origins(origins) ==
          "beam from the model file, length penalty from the model file, length normalisation from the model file");
    CHECK(o.beam == 6);
    CHECK(o.length_penalty == 1.0);
    CHECK(o.length_normalization == "power");
  }
  SECTION("the command line wins where it gave a value, even the built-in default's") {
    DecodingOptions o;
    o.beam = 4;  // --beam 4: the same as the built-in default, but given
    o.given.beam = true;
    o.length_penalty = 0.2;
    o.given.alpha = true;
    const SearchOrigins origins = apply_model_defaults(recommended, o);
    CHECK(describe_origins(origins) == "beam given, length penalty given, length normalisation from the model file");
    CHECK(o.beam == 4);
    CHECK(o.length_penalty == 0.2);
    CHECK(o.length_normalization == "power");
  }
  SECTION("everything given: nothing applied") {
    DecodingOptions o;
    o.given = {true, true, true};
    CHECK_FALSE(apply_model_defaults(recommended, o).any_from_model());
    CHECK(o.beam == 4);
    CHECK(o.length_penalty == 0.6);
    CHECK(o.length_normalization == "gnmt");
  }
  SECTION("a model file without recommendations: the built-in defaults") {
    DecodingOptions o;
    const SearchOrigins origins = apply_model_defaults(DecodingDefaults{}, o);
    CHECK_FALSE(origins.any_from_model());
    CHECK(describe_origins(origins) == "beam the default, length penalty the default, length normalisation the default");
    CHECK(o.beam == 4);
    CHECK(o.length_penalty == 0.6);
    CHECK(o.length_normalization == "gnmt");
  }
  SECTION("a partial recommendation touches only its own option") {
    DecodingDefaults beam_only;
    beam_only.beam = 2;
    DecodingOptions o;
    CHECK(apply_model_defaults(beam_only, o).beam == SettingOrigin::kModelFile);
    CHECK(o.beam == 2);
    CHECK(o.length_penalty == 0.6);
    CHECK(o.length_normalization == "gnmt");
  }
  SECTION("a beam above a server's limit is not taken by serve, and said so") {
    DecodingDefaults wide;
    wide.beam = kMaxServeBeam + 1;
    wide.alpha = 1.5;
    DecodingOptions o;
    std::string ignored;
    const SearchOrigins served = apply_model_defaults(wide, o, DecodingUse::kServer, &ignored);
    CHECK(served.beam == SettingOrigin::kDefault);
    CHECK(o.beam == kDefaultBeam);
    CHECK(served.alpha == SettingOrigin::kModelFile);
    CHECK(ignored == "the model file's beam 65 is above the largest this takes (64)");
    DecodingOptions batch;
    CHECK(apply_model_defaults(wide, batch).beam == SettingOrigin::kModelFile);  // translate takes it
    CHECK(batch.beam == kMaxServeBeam + 1);
  }
}

TEST_CASE("a model file's recommendations are read within the options' bounds", "[decode]") {
  model::ModelFileInfo info;
  info.metadata["decoding.beam"] = "12";
  info.metadata["decoding.length_penalty"] = "1.25";
  info.metadata["decoding.length_normalization"] = "none";
  const DecodingDefaults d = decoding_defaults(info, "m.safetensors");
  CHECK(d.beam.value_or(0) == 12);
  CHECK(d.alpha.value_or(0) == 1.25);
  CHECK(d.normalization.value_or("") == "none");
  CHECK_FALSE(decoding_defaults(model::ModelFileInfo{}, "m").beam.has_value());

  model::ModelFileInfo bad;
  bad.metadata["decoding.beam"] = std::to_string(kMaxBeam + 1);
  CHECK_THROWS_WITH(decoding_defaults(bad, "m.safetensors"),
                    "m.safetensors: metadata decoding.beam is '1025', expected 1..1024");
  bad.metadata = {{"decoding.length_penalty", "10.5"}};
  CHECK_THROWS_WITH(decoding_defaults(bad, "m.safetensors"),
                    "m.safetensors: metadata decoding.length_penalty is '10.5', expected 0..10");
  bad.metadata = {{"decoding.length_normalization", "average"}};
  CHECK_THROWS_WITH(decoding_defaults(bad, "m.safetensors"), Catch::Contains("expected gnmt, power or none"));
}

TEST_CASE("write_decoding_defaults: a model file carries its settings and nothing else changes", "[decode]") {
  const std::string dir = test::scratch_dir("decoding_defaults");
  const std::string path = dir + "/m.safetensors", out = dir + "/tuned.safetensors";
  model::ModelFileInfo saved;
  saved.step = 7;
  saved.metadata["averaged_from"] = "a, b";
  model::save_model(path, test::letters_model(16), saved);
  const io::SafeTensorsFile before = io::read_safetensors(path);

  DecodingDefaults tuned;
  tuned.beam = 6;
  tuned.alpha = 1.5;
  write_decoding_defaults(path, tuned, out);
  model::ModelFileInfo info;
  const model::Transformer loaded = model::load_model(out, DType::kF32, &info);  // still a model file
  const DecodingDefaults read = decoding_defaults(info, out);
  CHECK(read.beam.value_or(0) == 6);
  CHECK(read.alpha.value_or(0) == 1.5);
  CHECK_FALSE(read.normalization.has_value());
  CHECK(info.step == 7);
  CHECK(info.metadata.at("averaged_from") == "a, b");
  const io::SafeTensorsFile after = io::read_safetensors(out);
  REQUIRE(after.tensors.size() == before.tensors.size());
  for (std::size_t i = 0; i < after.tensors.size(); ++i) {
    CHECK(after.tensors[i].name == before.tensors[i].name);
    CHECK(after.tensors[i].data == before.tensors[i].data);  // the weights, byte for byte
  }
  CHECK(io::read_safetensors(path).metadata == before.metadata);  // the input untouched

  // In place, and cleared: no decoding.* key left.
  write_decoding_defaults(out, DecodingDefaults{}, out);
  CHECK(io::read_safetensors(out).metadata.count("decoding.beam") == 0);
  CHECK(io::read_safetensors(out).metadata.count("decoding.length_penalty") == 0);

  // Not a model file; values out of bounds: errors, nothing written.
  io::SafeTensorsFile other;
  other.metadata["format"] = "pytorch";
  io::write_safetensors(dir + "/other.safetensors", other);
  CHECK_THROWS_WITH(write_decoding_defaults(dir + "/other.safetensors", tuned, dir + "/x.safetensors"),
                    Catch::Contains("not a Dragoman model file"));
  DecodingDefaults wide;
  wide.beam = kMaxBeam + 1;
  CHECK_THROWS_WITH(write_decoding_defaults(path, wide, dir + "/x.safetensors"), Catch::Contains("decoding.beam"));
  CHECK_FALSE(std::filesystem::exists(dir + "/x.safetensors"));
}

}  // namespace
}  // namespace dragoman::decode
