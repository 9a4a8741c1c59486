// The whole model on a GPU against the same model on the CPU: the loss and every
// parameter gradient of one forward/backward pass in f32 (dropout on, so the Philox masks must agree
// too), incremental decoding's log-probabilities, and 20 training updates (Adam) from the same
// weights and batches, for a post-norm and a pre-norm configuration. The CPU is the spec; the GPU
// sums in other orders (cuBLASLt, warp reductions), so values agree to f32 round-off, not bits.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/batch.h"
#include "model/transformer.h"
#include "ops/adam.h"

namespace dragoman {
namespace {

const Device kGpu = Device::cuda(0);

model::ModelConfig tiny_config(bool pre_norm) {
  model::ModelConfig c;
  c.encoder_layers = c.decoder_layers = 2;
  c.d_model = 32, c.d_ff = 64, c.heads = 4, c.max_positions = 32;
  c.src_vocab_size = c.tgt_vocab_size = 40;
  c.dropout = c.attention_dropout = c.relu_dropout = 0.1;
  c.label_smoothing = 0.1;
  if (pre_norm) {
    c.norm = model::NormPlacement::kPre;
    c.positions = model::PositionKind::kLearned;
    c.share_embeddings = c.tie_output = false;
  }
  return c;
}

// Sentences of lengths 1 .. 9 over ids 4 .. 39 (deterministic in `salt`).
model::Batch make_batch(const model::ModelConfig& c, int salt) {
  std::vector<std::vector<std::int32_t>> src, tgt;
  for (int i = 0; i < 6; ++i) {
    std::vector<std::int32_t> s, t;
    for (int j = 0; j < 1 + (i * 3 + salt) % 9; ++j) s.push_back(4 + (i * 7 + j * 5 + salt) % 36);
    for (int j = 0; j < 1 + (i * 5 + salt) % 8; ++j) t.push_back(4 + (i * 11 + j * 3 + salt) % 36);
    src.push_back(s);
    tgt.push_back(t);
  }
  return model::Batch::from_sentences(src, tgt, c);
}

// ||a - b|| / max(||b||, tiny) over two CPU f32 tensors' values.
double relative_difference(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to(Device::cpu()).contiguous().to_vector<float>();
  const std::vector<float> y = b.to(Device::cpu()).contiguous().to_vector<float>();
  REQUIRE(x.size() == y.size());
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    norm += static_cast<double>(y[i]) * y[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

}  // namespace

TEST_CASE("The model's loss and every parameter gradient on a GPU equal the CPU's (f32)", "[cuda][model]") {
  for (const bool pre_norm : {false, true}) {
    INFO((pre_norm ? "pre-norm" : "post-norm"));
    const model::ModelConfig c = tiny_config(pre_norm);
    model::Transformer cpu(c, DType::kF32), gpu(c, DType::kF32, kGpu);
    cpu.initialize(3);
    gpu.initialize(3);
    CHECK(relative_difference(gpu.parameters().values(), cpu.parameters().values()) == 0);
    const model::Batch batch = make_batch(c, 1);
    const model::ForwardOptions training{true, 5, 7};
    cpu.parameters().zero_grads();
    gpu.parameters().zero_grads();
    model::ForwardActivations cpu_saved, gpu_saved;
    const model::LossResult expected = cpu.forward_loss(batch, training, cpu_saved);
    const model::LossResult got = gpu.forward_loss(batch.to(kGpu, c), training, gpu_saved);
    CHECK(got.tokens == expected.tokens);
    CHECK(got.loss_sum == Approx(expected.loss_sum).epsilon(1e-5));
    CHECK(got.nll_sum == Approx(expected.nll_sum).epsilon(1e-5));
    cpu.backward(std::move(cpu_saved), 0.01);
    gpu.backward(std::move(gpu_saved), 0.01);
    for (const model::ParameterEntry& e : cpu.parameters().entries()) {
      INFO(e.spec.name);
      const Tensor g = cpu.parameters().grad(e.spec.name);
      // k_proj biases get (mathematically) zero gradients: softmax ignores a constant shift.
      if (e.spec.name.find("k_proj.bias") != std::string::npos) continue;
      CHECK(relative_difference(gpu.parameters().grad(e.spec.name), g) < 1e-4);
    }
  }
}

TEST_CASE("Incremental decoding on a GPU gives the CPU's log-probabilities (f32)", "[cuda][model]") {
  const model::ModelConfig c = tiny_config(false);
  model::Transformer cpu(c, DType::kF32), gpu(c, DType::kF32, kGpu);
  cpu.initialize(4);
  gpu.initialize(4);
  const model::Batch batch = make_batch(c, 2);
  const model::Batch on_gpu = batch.to(kGpu, c);
  model::DecoderState cs = cpu.start_decoding(cpu.encode(batch.src, batch.src_lengths), batch.src_lengths, 8, 2);
  model::DecoderState gs = gpu.start_decoding(gpu.encode(on_gpu.src, on_gpu.src_lengths), on_gpu.src_lengths, 8, 2);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(batch.size() * 2), c.bos_id);
  for (int step = 0; step < 6; ++step) {
    INFO("step " << step);
    const Tensor feed = Tensor::from_vector(tokens, {static_cast<std::int64_t>(tokens.size())});
    const Tensor expected = cpu.decode_step(cs, feed);
    const Tensor got = gpu.decode_step(gs, feed.to(kGpu));
    CHECK(relative_difference(got, expected) < 1e-5);
    for (std::size_t r = 0; r < tokens.size(); ++r) tokens[r] = 4 + static_cast<std::int32_t>((r * 7 + step) % 36);
  }
}

TEST_CASE("20 training updates on a GPU follow the CPU's (f32, Adam)", "[cuda][model]") {
  const model::ModelConfig c = tiny_config(true);
  model::Transformer cpu(c, DType::kF32), gpu(c, DType::kF32, kGpu);
  cpu.initialize(6);
  gpu.initialize(6);
  const std::int64_t n = cpu.parameters().size();
  Tensor cm = Tensor::zeros({n}, DType::kF32), cv = Tensor::zeros({n}, DType::kF32);
  Tensor gm = Tensor::zeros({n}, DType::kF32, kGpu), gv = Tensor::zeros({n}, DType::kF32, kGpu);
  for (int step = 1; step <= 20; ++step) {
    INFO("update " << step);
    const model::Batch batch = make_batch(c, step);
    const model::ForwardOptions training{true, 9, static_cast<std::uint64_t>(step)};
    ops::AdamHyper hyper;
    hyper.step = step;
    hyper.lr = 1e-3;
    double losses[2];
    for (int device = 0; device < 2; ++device) {
      model::Transformer& model = device == 0 ? cpu : gpu;
      model.parameters().zero_grads();
      model::ForwardActivations saved;
      const model::LossResult r = model.forward_loss(device == 0 ? batch : batch.to(kGpu, c), training, saved);
      model.backward(std::move(saved), 1.0 / static_cast<double>(r.tokens));
      ops::adam_step(model.parameters().values(), model.parameters().grads(), device == 0 ? cm : gm,
                     device == 0 ? cv : gv, hyper);
      losses[device] = r.loss_sum / static_cast<double>(r.tokens);
    }
    CHECK(losses[1] == Approx(losses[0]).epsilon(1e-4));
  }
  // The losses follow each other within 1e-4 at every update; the weights drift further apart,
  // because Adam's step m / sqrt(v) is about +-lr for any gradient well above adam_eps however
  // small, so gradients that are rounding noise on both devices (CPU and GPU sum in other orders)
  // move their weights by lr in random directions: 1.2e-3 relative after 20 updates on an H200.
  // test_train_cuda.cpp allows 5e-3 for the same reason.
  CHECK(relative_difference(gpu.parameters().values(), cpu.parameters().values()) < 5e-3);
}

}  // namespace dragoman
