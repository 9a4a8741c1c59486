// The precision contract of the model (docs/MODEL.md, "Precision"): fp32 master weights, fp32
// gradients and a bf16/f16 mirror that the forward pass reads; decoding-only models that hold their
// weights in the compute dtype and no gradients; 16-bit forward passes that track fp32.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "model/checkpoint.h"
#include "model/model_testing.h"
#include "model/transformer.h"
#include "train/train_testing.h"

namespace dragoman::model {
namespace {

using Catch::Matchers::Contains;

std::vector<float> rounded(const std::vector<float>& values, DType dtype) {
  std::vector<float> out;
  for (const float v : values) {
    out.push_back(dtype == DType::kBF16 ? bf16::from_float(v).to_float() : f16::from_float(v).to_float());
  }
  return out;
}

const Batch& test_batch(const ModelConfig& c) {
  static const Batch batch =
      Batch::from_sentences({{5, 6, 7, 8}, {9}, {10, 11, 12}}, {{4, 5, 6, 7, 8}, {9, 10}, {}}, c);
  return batch;
}

}  // namespace

TEST_CASE("bf16/f16 training keeps f32 master weights and gradients and a rounded mirror", "[model]") {
  for (const DType compute : {DType::kBF16, DType::kF16}) {
    INFO(dtype_name(compute));
    Transformer model(test::fixture_config("post_tied_only"), ParameterPrecision::training(compute));
    model.initialize(3);
    const ParameterSet& p = model.parameters();
    CHECK(p.values().dtype() == DType::kF32);
    CHECK(p.grads().dtype() == DType::kF32);
    CHECK(p.compute_values().dtype() == compute);
    CHECK(model.dtype() == compute);
    const std::vector<float> master = p.values().to_vector<float>();
    CHECK(p.compute_values().to(DType::kF32).to_vector<float>() == rounded(master, compute));
    // A changed master reaches the forward pass only through refresh_compute_weights().
    model.parameters().values().fill_zero();
    CHECK(p.compute_values().to(DType::kF32).to_vector<float>() == rounded(master, compute));
    model.refresh_compute_weights();
    CHECK(p.compute_values().to(DType::kF32).to_vector<float>() == std::vector<float>(master.size(), 0.0f));
  }
  // fp32 and f64: master and compute weights are one buffer.
  Transformer f32(test::fixture_config("post_tied_only"), DType::kF32);
  CHECK(f32.parameters().compute_values().raw_data() == f32.parameters().values().raw_data());
  // Trained weights of 16-bit compute are f32: bf16 master weights would lose Adam's small updates.
  CHECK_THROWS_WITH(
      Transformer(test::fixture_config("post_tied_only"), ParameterPrecision{DType::kBF16, DType::kBF16, true}),
      Contains("trained master weights of BF16 compute are F32"));
}

TEST_CASE("A model loaded for decoding holds its weights in the compute dtype and no gradients", "[model]") {
  const std::filesystem::path dir = test::scratch_dir("precision");
  Transformer model(test::fixture_config("post_shared_tied"), DType::kF32);
  model.initialize(4);
  const std::string path = (dir / "model.safetensors").string();
  save_model(path, model, {});
  const std::vector<float> weights = model.parameters().values().to_vector<float>();
  for (const DType compute : {DType::kBF16, DType::kF16}) {
    INFO(dtype_name(compute));
    const Transformer loaded = load_model(path, ParameterPrecision::decoding(compute));
    CHECK(loaded.parameters().values().dtype() == compute);
    CHECK(loaded.parameters().compute_values().raw_data() == loaded.parameters().values().raw_data());
    CHECK_FALSE(loaded.parameters().grads().defined());
    CHECK(loaded.parameters().values().to(DType::kF32).to_vector<float>() == rounded(weights, compute));
  }
  Transformer decoding = load_model(path, ParameterPrecision::decoding(DType::kF32));
  CHECK(decoding.parameters().values().to_vector<float>() == weights);
  ForwardActivations saved;
  decoding.forward_loss(test_batch(decoding.config()), {}, saved);
  CHECK_THROWS_WITH(decoding.backward(std::move(saved)), Contains("no gradients"));
  CHECK_THROWS_WITH(decoding.parameters().zero_grads(), Contains("no gradients"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("16-bit forward passes track fp32, and decoding returns fp32 log-probabilities", "[model]") {
  for (const std::string& name : test::kFixtureCases) {
    Transformer reference(test::fixture_config(name), DType::kF32);
    reference.initialize(7);
    const ModelConfig& c = reference.config();
    const Batch& batch = test_batch(c);
    const LossResult expected = reference.loss(batch);
    for (const DType compute : {DType::kBF16, DType::kF16}) {
      INFO(name << " " << dtype_name(compute));
      Transformer model(c, ParameterPrecision::training(compute));
      model.parameters().values().copy_from(reference.parameters().values());
      model.refresh_compute_weights();
      const LossResult got = model.loss(batch);
      CHECK(got.tokens == expected.tokens);
      CHECK(std::abs(got.loss_sum - expected.loss_sum) <= 0.01 * expected.loss_sum);
      CHECK(std::abs(got.nll_sum - expected.nll_sum) <= 0.01 * expected.nll_sum);

      // Incremental decoding: log-probabilities in f32, close to the fp32 model's.
      const Tensor memory = model.encode(batch.src, batch.src_lengths);
      CHECK(memory.dtype() == compute);
      DecoderState state = model.start_decoding(memory, batch.src_lengths, 4);
      DecoderState ref_state =
          reference.start_decoding(reference.encode(batch.src, batch.src_lengths), batch.src_lengths, 4);
      const Tensor bos = Tensor::from_vector(std::vector<std::int32_t>(3, c.bos_id), {3});
      const Tensor step = model.decode_step(state, bos);
      const Tensor ref_step = reference.decode_step(ref_state, bos);
      CHECK(step.dtype() == DType::kF32);
      const std::vector<float> a = step.to_vector<float>(), b = ref_step.to_vector<float>();
      double worst = 0;
      for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
      CHECK(worst < 0.05);
    }
  }
}

TEST_CASE("A forward pass adds its loss sums into the caller's tensor, leaving LossResult's unread", "[model]") {
  Transformer model(test::fixture_config("post_shared_tied"), DType::kF32);
  model.initialize(5);
  const Batch& batch = test_batch(model.config());
  const LossResult expected = model.loss(batch);
  Tensor sums = Tensor::zeros({2}, DType::kF64);
  ForwardOptions options;
  options.loss_sums = &sums;
  const LossResult first = model.loss(batch, options);
  CHECK(std::isnan(first.loss_sum));
  CHECK(first.tokens == expected.tokens);
  ForwardActivations saved;
  model.forward_loss(batch, options, saved);  // training's fused form adds the same sums
  const std::vector<double> got = sums.to_vector<double>();
  CHECK(got[0] == Approx(2 * expected.loss_sum).epsilon(1e-12));
  CHECK(got[1] == Approx(2 * expected.nll_sum).epsilon(1e-12));
}

// The gradient of a bf16/f16 forward/backward is an f32 buffer close to the fp32 model's. The bound
// is loose for bf16 (measured: 5.9 % relative L2 error, f16 0.1 %): near initialisation attention
// is almost uniform, and the softmax and layer-norm backward passes subtract nearly equal 16-bit
// values. The per-op tests (tests/ops) check each kernel's rounding exactly.
TEST_CASE("bf16/f16 backward passes accumulate f32 gradients close to fp32's", "[model]") {
  Transformer reference(test::fixture_config("pre_untied_learned"), DType::kF32);
  reference.initialize(9);
  const Batch& batch = test_batch(reference.config());
  reference.parameters().zero_grads();
  ForwardActivations ref_saved;
  reference.forward_loss(batch, {}, ref_saved);
  reference.backward(std::move(ref_saved));
  const std::vector<float> expected = reference.parameters().grads().to_vector<float>();
  double norm = 0;
  for (const float g : expected) norm += static_cast<double>(g) * g;
  norm = std::sqrt(norm);
  for (const DType compute : {DType::kBF16, DType::kF16}) {
    INFO(dtype_name(compute));
    Transformer model(reference.config(), ParameterPrecision::training(compute));
    model.parameters().values().copy_from(reference.parameters().values());
    model.refresh_compute_weights();
    model.parameters().zero_grads();
    ForwardActivations saved;
    model.forward_loss(batch, {}, saved);
    model.backward(std::move(saved));
    const std::vector<float> got = model.parameters().grads().to_vector<float>();
    double diff = 0;
    for (std::size_t i = 0; i < got.size(); ++i) diff += std::pow(static_cast<double>(got[i]) - expected[i], 2);
    INFO("relative gradient error " << std::sqrt(diff) / norm);
    CHECK(std::sqrt(diff) <= (compute == DType::kBF16 ? 0.1 : 0.01) * norm);
  }
}

}  // namespace dragoman::model
