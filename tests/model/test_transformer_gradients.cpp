// The whole Transformer's backward pass against float64 central finite differences, every parameter
// tensor, for the three fixture configurations (post-norm shared/tied embeddings with sinusoids;
// pre-norm, untied, learned positions, d_k != d_v; one encoder and three decoder layers) and the
// options imported models use (Swish, output bias, other sinusoid layouts, <pad> as BOS), with
// padding on both sides, label smoothing, and every dropout on (the masks are a function of
// (seed, step), so the loss is a deterministic function of the parameters).
#include <catch2/catch.hpp>

#include <cmath>

#include "model/model_testing.h"
#include "model/transformer.h"
#include "ops/elementwise.h"

namespace dragoman::model {

namespace {

// Every parameter tensor's gradient against central differences, with padding on both sides and
// every dropout on.
void check_every_parameter(ModelConfig config) {
  config.dropout = 0.1;
  config.attention_dropout = 0.1;
  config.relu_dropout = 0.1;
  if (config.label_smoothing == 0) config.label_smoothing = 0.1;
  Transformer model(config, DType::kF64);
  model.initialize(7);
  // Move layer norms and biases away from their 1 / 0 starting values, so every term matters.
  ParameterSet& params = model.parameters();
  ops::add_(params.values(), test::random_tensor({params.size()}, DType::kF64, 99, 0.05));
  // Sentences of lengths 1..5 on both sides: padding in the source and in the target.
  const Batch batch =
      Batch::from_sentences({{5, 6, 7, 8, 9}, {10}, {11, 12, 4}}, {{6, 7}, {8, 9, 10, 11, 5}, {}}, config);
  const ForwardOptions options{true, 1234, 5};
  params.zero_grads();
  ForwardActivations saved;
  model.forward_loss(batch, options, saved);
  model.backward(std::move(saved), 1.0);
  const auto loss = [&] { return model.loss(batch, options).loss_sum; };
  // Step 1e-6: small enough that a ReLU input near 0 rarely changes sign inside [p - h, p + h]
  // (1e-5 crossed one such kink in pre_untied_learned), large enough for float64 round-off.
  // A model that starts decoding from <pad> takes that start as a constant (nn.Embedding's
  // padding_idx, ops::embedding_backward): the <pad> row of a token table gets no gradient through
  // its lookup, by design not the loss's derivative, and is left out here (checked below).
  const bool pad_starts = config.bos_id == config.pad_id;
  for (const ParameterEntry& e : params.entries()) {
    INFO("parameter " << e.spec.name);
    Tensor value = params.value(e.spec.name);  // perturbed by check_gradient
    const bool table = e.spec.name == "embed.weight" || e.spec.name == "decoder.embed.weight";
    const auto pad_row = [&](std::int64_t i) { return pad_starts && table && i / config.d_model == config.pad_id; };
    const test::GradientCheck check = test::check_gradient(loss, value, params.grad(e.spec.name), 24, 1e-6, pad_row);
    INFO("worst element " << check.worst_index << ": numeric " << check.numeric << ", analytic " << check.analytic);
    CHECK(check.checked > 0);
    CHECK(check.worst_error < 1e-7);
  }
}

}  // namespace

TEST_CASE("Transformer gradients match finite differences for every parameter", "[model]") {
  for (const std::string& name : test::kFixtureCases) {
    SECTION(name) { check_every_parameter(test::fixture_config(name)); }
  }
}

TEST_CASE("Transformer gradients match finite differences with the imported models' options", "[model]") {
  // Marian / MarianMT: Swish, an output bias, concatenated or tensor2tensor sinusoids, decoding
  // started from <pad>; and unscaled embeddings with separate vocabularies.
  ModelConfig config = test::fixture_config("post_shared_tied");
  config.activation = Activation::kSwish;
  config.output_bias = true;
  SECTION("marian") {
    config.sinusoids = ops::SinusoidLayout::kTensor2Tensor;
    config.bos_id = config.pad_id;
    check_every_parameter(config);
  }
  SECTION("marianmt unscaled, separate vocabularies") {
    config.sinusoids = ops::SinusoidLayout::kConcatenated;
    config.scale_embeddings = false;
    config.share_embeddings = false;
    config.tie_output = false;
    check_every_parameter(config);
  }
}

TEST_CASE("A model that starts decoding from <pad> keeps that start's embedding", "[model]") {
  // Separate, untied tables: the decoder's <pad> row is used only as the start's lookup, which
  // gives it no gradient; the same model started from another token trains that token's row.
  ModelConfig config = test::fixture_config("post_shared_tied");
  config.share_embeddings = false;
  config.tie_output = false;
  config.bos_id = config.pad_id;
  Transformer model(config, DType::kF64);
  model.initialize(7);
  const Batch batch = Batch::from_sentences({{5, 6, 7}, {8}}, {{6, 7}, {8, 9, 10}}, config);
  model.parameters().zero_grads();
  ForwardActivations saved;
  model.forward_loss(batch, ForwardOptions{}, saved);
  model.backward(std::move(saved), 1.0);
  const std::vector<double> grad = model.parameters().grad("decoder.embed.weight").to_vector<double>();
  const auto row_norm = [&](std::int64_t row) {
    double sum = 0;
    for (std::int64_t i = 0; i < config.d_model; ++i)
      sum += std::abs(grad[static_cast<std::size_t>(row * config.d_model + i)]);
    return sum;
  };
  CHECK(row_norm(config.pad_id) == 0.0);
  CHECK(row_norm(6) > 0.0);  // a target token's row trains
}

TEST_CASE("Transformer backward accumulates and scales its gradients", "[model]") {
  const ModelConfig config = test::fixture_config("post_shared_tied");
  Transformer model(config, DType::kF64);
  model.initialize(3);
  const Batch batch = Batch::from_sentences({{5, 6, 7}, {8}}, {{9, 10}, {11, 12, 13}}, config);
  ParameterSet& params = model.parameters();
  params.zero_grads();
  ForwardActivations first, second;
  model.forward_loss(batch, {}, first);
  model.backward(std::move(first), 1.0);
  const std::vector<double> once = params.grads().to_vector<double>();
  model.forward_loss(batch, {}, second);
  // An evaluation in between neither needs nor disturbs the saved activations.
  const Batch other = Batch::from_sentences({{7}}, {{8, 9, 10, 11}}, config);
  CHECK(model.evaluate(other).loss.tokens == 5);
  model.backward(std::move(second), 0.5);
  const std::vector<double> accumulated = params.grads().to_vector<double>();
  for (std::size_t i = 0; i < once.size(); ++i) REQUIRE(accumulated[i] == Approx(1.5 * once[i]).margin(1e-14));
  CHECK(second.empty());  // consumed
  CHECK_THROWS_WITH(model.backward(std::move(second), 1.0), Catch::Contains("activations are empty"));
}

}  // namespace dragoman::model

namespace dragoman::model {

TEST_CASE("Transformer forward_loss scales the loss's gradient for backward when told its scale", "[model]") {
  // f32, as training runs: the gradients of a forward pass with dlogits_scale s and backward(s) are
  // those of an unscaled forward pass and backward(s) (which scales the dlogits itself), bit for bit.
  const ModelConfig config = test::fixture_config("pre_untied_learned");
  Transformer model(config, DType::kF32);
  model.initialize(5);
  const Batch batch = Batch::from_sentences({{5, 6, 7, 8}, {9}}, {{10, 11}, {12, 13, 14}}, config);
  ParameterSet& params = model.parameters();
  const double s = 1.0 / 7.0;
  const ForwardOptions plain{true, 99, 3};
  ForwardOptions scaled = plain;
  scaled.dlogits_scale = s;

  params.zero_grads();
  ForwardActivations a, b;
  const LossResult ra = model.forward_loss(batch, plain, a);
  model.backward(std::move(a), s);
  const std::vector<float> expected = params.grads().to_vector<float>();
  params.zero_grads();
  const LossResult rb = model.forward_loss(batch, scaled, b);
  model.backward(std::move(b), s);
  CHECK(rb.loss_sum == ra.loss_sum);
  CHECK(params.grads().to_vector<float>() == expected);

  ForwardActivations c;
  model.forward_loss(batch, scaled, c);
  CHECK_THROWS_WITH(model.backward(std::move(c), 2 * s), Catch::Contains("dlogits_scale"));
}

}  // namespace dragoman::model
