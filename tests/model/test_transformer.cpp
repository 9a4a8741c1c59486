// The Transformer's behaviour beyond single gradients: incremental decoding equals the full
// forward pass, padding does not change real positions, evaluation is deterministic and dropout is
// a function of (seed, step), a small batch can be overfitted, and ModelConfig refuses invalid models.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "kernels/cpu/quantize.h"
#include "model/checkpoint.h"
#include "model/model_testing.h"
#include "model/transformer.h"
#include "ops/adam.h"
#include "ops/elementwise.h"

namespace dragoman::model {
namespace {

// Log-probability [V] of batch row b, target position t, from a [B, T, V] tensor.
std::vector<double> row_of(const Tensor& log_probs, std::int64_t b, std::int64_t t) {
  return log_probs.narrow(0, b, 1).narrow(1, t, 1).to(DType::kF64).to_vector<double>();
}

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// Feeds row r the target-input token at position t of batch sentence sentence_of_row[r] and checks
// each row's log-probabilities against the full pass's [B, T, V] `full` at (sentence, t).
void check_decode_step(const Transformer& model, DecoderState& state, const Batch& batch, const Tensor& full,
                       std::int64_t t, const std::vector<std::int64_t>& sentence_of_row) {
  const std::int32_t* in = batch.tgt_in.data<std::int32_t>();
  const std::int64_t t_max = batch.tgt_in.dim(1);
  std::vector<std::int32_t> feed;
  for (const std::int64_t s : sentence_of_row) feed.push_back(in[s * t_max + t]);
  const Tensor step = model.decode_step(state, Tensor::from_vector(feed, {static_cast<std::int64_t>(feed.size())}));
  for (std::size_t r = 0; r < sentence_of_row.size(); ++r) {
    INFO("step " << t << " row " << r);
    CHECK(max_abs_difference(step.narrow(0, static_cast<std::int64_t>(r), 1).to_vector<double>(),
                             row_of(full, sentence_of_row[r], t)) < 1e-12);
  }
}

Transformer random_model(const std::string& name, DType dtype = DType::kF64) {
  Transformer model(test::fixture_config(name), dtype);
  model.initialize(11);
  ops::add_(model.parameters().values(), test::random_tensor({model.parameters().size()}, dtype, 5, 0.05));
  return model;
}

}  // namespace

TEST_CASE("Incremental decode_step gives the full forward pass's log-probabilities", "[model]") {
  for (const std::string& name : test::kFixtureCases) {
    SECTION(name) {
      Transformer model = random_model(name);
      const ModelConfig& c = model.config();
      const Batch batch = Batch::from_sentences({{5, 6, 7, 8}, {9}, {10, 11, 12}}, {{4, 5, 6, 7, 8}, {9, 10}, {}}, c);
      const Evaluation e = model.evaluate(batch);
      const Tensor full = e.log_probs;  // [B, T, V]
      const Tensor memory = model.encode(batch.src, batch.src_lengths);
      CHECK(max_abs_difference(memory.to_vector<double>(), e.encoder_output.to_vector<double>()) == 0);
      DecoderState state = model.start_decoding(memory, batch.src_lengths, batch.tgt_in.dim(1));
      const std::int64_t b = batch.size(), t_max = batch.tgt_in.dim(1);
      for (std::int64_t t = 0; t < t_max; ++t) {
        const Tensor tokens = batch.tgt_in.narrow(1, t, 1).contiguous().view({b});
        const Tensor step = model.decode_step(state, tokens);  // [B, V]
        for (std::int64_t i = 0; i < b; ++i) {
          if (t >= batch.tgt_lengths.data<std::int32_t>()[i]) continue;  // padding: unspecified
          INFO("row " << i << " step " << t);
          CHECK(max_abs_difference(step.narrow(0, i, 1).to_vector<double>(), row_of(full, i, t)) < 1e-12);
        }
      }
      CHECK_THROWS_WITH(model.decode_step(state, batch.tgt_in.narrow(1, 0, 1).contiguous().view({b})),
                        Catch::Contains("full"));
    }
  }
}

TEST_CASE("decode_step grows the self-attention cache past its first positions", "[model]") {
  // start_decoding allocates 16 positions and decode_step doubles them: 40 tokens cross two
  // growths, one of them right after select_rows has reordered and dropped rows.
  ModelConfig c = test::fixture_config("pre_untied_learned");
  c.max_positions = 64;
  Transformer model(c, DType::kF64);
  model.initialize(3);
  std::vector<std::int32_t> long_target, other_target;
  for (int i = 0; i < 40; ++i) {
    long_target.push_back(4 + i % 7);
    other_target.push_back(4 + (3 * i) % 5);
  }
  const Batch batch = Batch::from_sentences({{5, 6, 7}, {8, 9}}, {long_target, other_target}, c);
  const Tensor full = model.evaluate(batch).log_probs;  // [2, 41, V]
  DecoderState state = model.start_decoding(model.encode(batch.src, batch.src_lengths), batch.src_lengths, 41);
  model.select_rows(state, {1, 0});  // rows: sentence 1, sentence 0
  std::vector<std::int64_t> sentence_of_row = {1, 0};
  for (std::int64_t t = 0; t < batch.tgt_in.dim(1); ++t) {
    if (t == 20) {  // drop sentence 1 (row 0); the cache then grows at t = 32 with one row
      model.select_rows(state, {1});
      sentence_of_row = {0};
    }
    check_decode_step(model, state, batch, full, t, sentence_of_row);
  }
  CHECK(state.self_k.front().dim(1) == 41);  // 16 -> 32 -> 41 (the capacity)
}

TEST_CASE("A decoder state with several beams per source keeps each source's cross-attention once", "[model]") {
  Transformer model = random_model("post_shared_tied");
  const ModelConfig& c = model.config();
  const Batch batch = Batch::from_sentences({{5, 6, 7}, {8, 9}}, {{4, 5, 6, 7}, {7, 8, 9, 10}}, c);
  const Tensor full = model.evaluate(batch).log_probs;  // [2, 5, V]
  DecoderState state = model.start_decoding(model.encode(batch.src, batch.src_lengths), batch.src_lengths, 5, 2);
  CHECK(state.batch_size() == 4);  // rows: sentence 0, 0, 1, 1
  CHECK(state.cross_k.front().dim(0) == 2);
  const auto check_step = [&](std::int64_t t, const std::vector<std::int64_t>& sentence_of_row) {
    check_decode_step(model, state, batch, full, t, sentence_of_row);
  };
  check_step(0, {0, 0, 1, 1});
  model.select_rows(state, {1, 0, 3, 3}, true);  // beams trade places within their sentence
  check_step(1, {0, 0, 1, 1});
  model.select_rows(state, {3, 2, 0, 1});  // the sentences trade places
  check_step(2, {1, 1, 0, 0});
  model.select_rows(state, {2, 2});  // sentence 1 (now rows 0, 1) is dropped
  CHECK(state.cross_k.front().dim(0) == 1);
  check_step(3, {0, 0});
  CHECK_THROWS_WITH(model.select_rows(state, {0}), Catch::Contains("not runs of 2 beams"));
  model.select_rows(state, {0, 1, 0, 1});  // a source may repeat
  CHECK_THROWS_WITH(model.select_rows(state, {1, 2}), Catch::Contains("decode different sources"));
}

TEST_CASE("select_rows reorders and duplicates the decoder state like beam search needs", "[model]") {
  Transformer model = random_model("pre_untied_learned");
  const ModelConfig& c = model.config();
  const Batch batch = Batch::from_sentences({{5, 6, 7}, {8, 9}}, {{4, 5, 6}, {7, 8, 9}}, c);
  const Tensor full = model.evaluate(batch).log_probs;
  DecoderState state = model.start_decoding(model.encode(batch.src, batch.src_lengths), batch.src_lengths, 4);
  model.decode_step(state, batch.tgt_in.narrow(1, 0, 1).contiguous().view({2}));
  model.select_rows(state, {1, 0, 1});                         // rows now: sentence 1, sentence 0, sentence 1
  const std::int32_t* in = batch.tgt_in.data<std::int32_t>();  // [2, T]
  const std::int64_t t = batch.tgt_in.dim(1);
  const Tensor next = Tensor::from_vector(std::vector<std::int32_t>{in[t + 1], in[1], in[t + 1]}, {3});
  const Tensor step = model.decode_step(state, next);
  CHECK(max_abs_difference(step.narrow(0, 0, 1).to_vector<double>(), row_of(full, 1, 1)) < 1e-12);
  CHECK(max_abs_difference(step.narrow(0, 1, 1).to_vector<double>(), row_of(full, 0, 1)) < 1e-12);
  CHECK(max_abs_difference(step.narrow(0, 2, 1).to_vector<double>(), row_of(full, 1, 1)) < 1e-12);
  // Rows 0 and 2 decode the same sentence: trading them keeps the cross-attention state in place.
  model.select_rows(state, {2, 1, 0}, true);
  const Tensor third = Tensor::from_vector(std::vector<std::int32_t>{in[t + 2], in[2], in[t + 2]}, {3});
  const Tensor step3 = model.decode_step(state, third);
  CHECK(max_abs_difference(step3.narrow(0, 0, 1).to_vector<double>(), row_of(full, 1, 2)) < 1e-12);
  CHECK(max_abs_difference(step3.narrow(0, 1, 1).to_vector<double>(), row_of(full, 0, 2)) < 1e-12);
  CHECK(max_abs_difference(step3.narrow(0, 2, 1).to_vector<double>(), row_of(full, 1, 2)) < 1e-12);
  CHECK_THROWS_WITH(model.select_rows(state, {3}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(model.select_rows(state, {0, 1}, true), Catch::Contains("one row per state row"));
}

TEST_CASE("select_rows moves nothing when every row stays in place, and still drops trailing sentences", "[model]") {
  Transformer model = random_model("post_shared_tied");
  const ModelConfig& c = model.config();
  const Batch batch = Batch::from_sentences({{5, 6, 7}, {8, 9}}, {{4, 5, 6, 7}, {7, 8, 9, 10}}, c);
  const Tensor full = model.evaluate(batch).log_probs;
  DecoderState state = model.start_decoding(model.encode(batch.src, batch.src_lengths), batch.src_lengths, 5, 2);
  check_decode_step(model, state, batch, full, 0, {0, 0, 1, 1});
  const void* self_k = state.self_k.front().raw_data();
  const void* cross_k = state.cross_k.front().raw_data();
  // The identity, as greedy search (and beam search when each beam extends itself) asks for it:
  // the caches stay the same tensors, not copies.
  model.select_rows(state, {0, 1, 2, 3}, true);
  model.select_rows(state, {0, 1, 2, 3});
  CHECK(state.self_k.front().raw_data() == self_k);
  CHECK(state.cross_k.front().raw_data() == cross_k);
  check_decode_step(model, state, batch, full, 1, {0, 0, 1, 1});
  // Rows 0 and 1 kept in place, sentence 1 dropped: the rows are an identity prefix, yet the state
  // must shrink to one sentence.
  model.select_rows(state, {0, 1});
  CHECK(state.batch_size() == 2);
  CHECK(state.cross_k.front().dim(0) == 1);
  CHECK(state.self_k.front().dim(0) == 2);
  check_decode_step(model, state, batch, full, 2, {0, 0});
}

TEST_CASE("On the CPU select_rows and append_decoding keep the caches' memory", "[model]") {
  // Beams trading places and a dropped sentence move rows within the caches; a sentence that joins
  // goes to the rows the dropped one left. Each step still gives the full pass's log-probabilities.
  Transformer model = random_model("post_shared_tied");
  const ModelConfig& c = model.config();
  const Batch batch = Batch::from_sentences({{5, 6, 7}, {8, 9}}, {{4, 5, 6, 7}, {7, 8, 9, 10}}, c);
  const Tensor full = model.evaluate(batch).log_probs;
  DecoderState state = model.start_decoding(model.encode(batch.src, batch.src_lengths), batch.src_lengths, 5, 2);
  const void* self_k = state.self_k.front().raw_data();
  const void* cross_v = state.cross_v.back().raw_data();
  check_decode_step(model, state, batch, full, 0, {0, 0, 1, 1});
  model.select_rows(state, {1, 0, 2, 2}, true);
  check_decode_step(model, state, batch, full, 1, {0, 0, 1, 1});
  model.select_rows(state, {2, 3});  // sentence 0 dropped: sentence 1 moves to the first rows
  CHECK(state.self_k.front().raw_data() == self_k);
  CHECK(state.cross_v.back().raw_data() == cross_v);
  CHECK(state.self_k.front().dim(0) == 2);
  CHECK(state.cross_v.back().dim(0) == 1);
  check_decode_step(model, state, batch, full, 2, {1, 1});
  // A new sentence joins: its rows go where sentence 0's were.
  const std::vector<std::int32_t> source = {10, 11, 12};
  const Batch joining = Batch::from_sentences({source}, {{}}, c);
  model.append_decoding(
      state, model.start_decoding(model.encode(joining.src, joining.src_lengths), joining.src_lengths, 5, 2));
  CHECK(state.self_k.front().raw_data() == self_k);
  CHECK(state.cross_v.back().raw_data() == cross_v);
  CHECK(state.batch_size() == 4);
  const std::int32_t* in = batch.tgt_in.data<std::int32_t>();
  const std::int64_t t_max = batch.tgt_in.dim(1);
  const Tensor step = model.decode_step(
      state, Tensor::from_vector(std::vector<std::int32_t>{in[t_max + 3], in[t_max + 3], c.bos_id, c.bos_id}, {4}));
  DecoderState alone = model.start_decoding(model.encode(joining.src, joining.src_lengths), joining.src_lengths, 5);
  const Tensor first = model.decode_step(alone, Tensor::from_vector(std::vector<std::int32_t>{c.bos_id}, {1}));
  CHECK(max_abs_difference(step.narrow(0, 0, 1).to_vector<double>(), row_of(full, 1, 3)) < 1e-12);
  CHECK(max_abs_difference(step.narrow(0, 1, 1).to_vector<double>(), row_of(full, 1, 3)) < 1e-12);
  CHECK(max_abs_difference(step.narrow(0, 2, 1).to_vector<double>(), first.to_vector<double>()) < 1e-12);
  CHECK(max_abs_difference(step.narrow(0, 3, 1).to_vector<double>(), first.to_vector<double>()) < 1e-12);
}

TEST_CASE("Padding does not change the outputs of real positions", "[model]") {
  for (const std::string& name : test::kFixtureCases) {
    SECTION(name) {
      Transformer model = random_model(name);
      const ModelConfig& c = model.config();
      const Batch alone = Batch::from_sentences({{5, 6, 7}}, {{8, 9}}, c);
      const Evaluation e1 = model.evaluate(alone);
      const LossResult& r1 = e1.loss;
      const Tensor lp1 = e1.log_probs;
      // The same pair next to longer sentences: its source and target are now padded.
      const Batch padded = Batch::from_sentences({{10, 11, 12, 4, 5, 6}, {5, 6, 7}}, {{4, 5, 6, 7, 8}, {8, 9}}, c);
      const Tensor lp2 = model.evaluate(padded).log_probs;
      for (std::int64_t t = 0; t < 3; ++t) CHECK(max_abs_difference(row_of(lp1, 0, t), row_of(lp2, 1, t)) < 1e-12);
      // And the loss of a batch is the sum of its sentences' losses.
      const LossResult r_long = model.loss(Batch::from_sentences({{10, 11, 12, 4, 5, 6}}, {{4, 5, 6, 7, 8}}, c));
      const LossResult r_both = model.loss(padded);
      CHECK(r_both.loss_sum == Approx(r1.loss_sum + r_long.loss_sum).epsilon(1e-12));
      CHECK(r_both.tokens == r1.tokens + r_long.tokens);
    }
  }
}

TEST_CASE("backward hands over each gradient bucket once, in order, when its gradients are final", "[model]") {
  for (const std::string& name : test::kFixtureCases) {
    SECTION(name) {
      Transformer model = random_model(name);
      const ModelConfig& c = model.config();
      const std::vector<GradientRange>& buckets = model.gradient_buckets();
      // The buckets cover the gradient buffer exactly once, the layers first (decoder, then encoder,
      // each last layer first), each a non-empty range.
      CHECK(buckets.size() >= static_cast<std::size_t>(c.encoder_layers + c.decoder_layers + 1));
      std::vector<int> cover(static_cast<std::size_t>(model.parameters().size()), 0);
      for (const GradientRange& b : buckets) {
        REQUIRE(b.first < b.second);
        for (std::int64_t i = b.first; i < b.second; ++i) ++cover[static_cast<std::size_t>(i)];
      }
      CHECK(std::count(cover.begin(), cover.end(), 1) == static_cast<std::ptrdiff_t>(cover.size()));
      CHECK(buckets[0].first > buckets[static_cast<std::size_t>(c.decoder_layers - 1)].first);  // last layer first

      // Two batches accumulated; during the second backward, each bucket handed over already holds
      // its final gradients (a copy taken then equals the buffer after the pass).
      const Batch batch = Batch::from_sentences({{5, 6, 7, 8}, {9, 4}}, {{4, 5}, {6, 7, 8}}, c);
      model.parameters().zero_grads();
      ForwardActivations first;
      model.forward_loss(batch, {true, 3, 1}, first);
      model.backward(std::move(first));
      std::vector<GradientRange> handed;
      std::vector<std::vector<double>> at_handover;
      ForwardActivations second;
      model.forward_loss(batch, {true, 3, 2}, second);
      model.backward(std::move(second), 0.5, [&](const GradientRange& range) {
        handed.push_back(range);
        at_handover.push_back(
            model.parameters().grads().narrow(0, range.first, range.second - range.first).to_vector<double>());
      });
      CHECK(handed == buckets);
      for (std::size_t b = 0; b < handed.size(); ++b) {
        INFO("bucket " << b);
        const GradientRange& range = handed[b];
        CHECK(at_handover[b] ==
              model.parameters().grads().narrow(0, range.first, range.second - range.first).to_vector<double>());
      }
    }
  }
}

TEST_CASE("quantize_int8: decoding log-probabilities stay close to f32's", "[model]") {
  for (const std::string& name : test::kFixtureCases) {
    SECTION(name) {
      const ModelConfig c = test::fixture_config(name);
      Transformer f32(c, ParameterPrecision::decoding(DType::kF32)), int8(c, ParameterPrecision::decoding(DType::kF32));
      for (Transformer* m : {&f32, &int8}) {
        m->initialize(11);
        m->refresh_compute_weights();
      }
      int8.quantize_int8();
      CHECK(int8.quantized());
      CHECK_THROWS_WITH(Transformer(c, DType::kF64).quantize_int8(), Catch::Contains("f32 decoding model"));
      const Batch batch = Batch::from_sentences({{5, 6, 7, 8}, {9, 4}}, {{4}, {5}}, c);
      std::vector<std::int32_t> feed(2, c.bos_id);
      DecoderState a = f32.start_decoding(f32.encode(batch.src, batch.src_lengths), batch.src_lengths, 6);
      DecoderState b = int8.start_decoding(int8.encode(batch.src, batch.src_lengths), batch.src_lengths, 6);
      double worst = 0;
      for (int step = 0; step < 4; ++step) {
        const Tensor tokens = Tensor::from_vector(feed, {2});
        const std::vector<float> x = f32.decode_step(a, tokens).to_vector<float>();
        const std::vector<float> y = int8.decode_step(b, tokens).to_vector<float>();
        for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(x[i]) - y[i]));
        feed = {static_cast<std::int32_t>(4 + step), static_cast<std::int32_t>(5 + step)};
      }
      INFO("largest log-probability difference " << worst);
      CHECK(worst > 0);    // the int8 path ran
      CHECK(worst < 0.2);  // and stayed close (measured: 0.025 to 0.085)
    }
  }
}

TEST_CASE("pack_weights: f32 decoding within float rounding of the plain products, int8 bit for bit", "[model]") {
  for (const std::string& name : test::kFixtureCases) {
    SECTION(name) {
      const ModelConfig c = test::fixture_config(name);
      const auto make = [&c] {
        Transformer m(c, ParameterPrecision::decoding(DType::kF32));
        m.initialize(11);
        m.refresh_compute_weights();
        return m;
      };
      Transformer f32 = make(), f32_packed = make(), int8 = make(), int8_packed = make();
      const std::size_t packed_bytes = f32_packed.pack_weights();
      int8.quantize_int8();
      int8_packed.quantize_int8();
      const std::size_t packed_int8_bytes = int8_packed.pack_weights();
      // Packing happens where oneDNN has a blocked layout for this CPU (tests/kernels/test_packed_gemm.cpp
      // checks when that is: f32 from AVX-512 up, s8 from AVX512-VNNI up, and s8 without VNNI keeps
      // its weights with their row sums for the u8 x s8 GEMM); the products below are the same either
      // way. s8 packed for VNNI means AVX-512, where f32 packs too.
      if (packed_int8_bytes > 0 && cpu::int8_weight_max() == 127) CHECK(packed_bytes > 0);
      CHECK(f32_packed.pack_weights() == packed_bytes);  // once
      CHECK_THROWS_WITH(f32_packed.quantize_int8(), Catch::Contains("quantize before pack_weights"));
      CHECK_THROWS_WITH(Transformer(c, DType::kF64).pack_weights(), Catch::Contains("f32 decoding model"));
      const Batch batch = Batch::from_sentences({{5, 6, 7, 8}, {9, 4}}, {{4}, {5}}, c);
      std::vector<Transformer*> models = {&f32, &f32_packed, &int8, &int8_packed};
      std::vector<DecoderState> states;
      for (Transformer* m : models)
        states.push_back(m->start_decoding(m->encode(batch.src, batch.src_lengths), batch.src_lengths, 6));
      std::vector<std::int32_t> feed(2, c.bos_id);
      double worst = 0;
      for (int step = 0; step < 4; ++step) {
        const Tensor tokens = Tensor::from_vector(feed, {2});
        std::vector<std::vector<float>> out;
        for (std::size_t i = 0; i < models.size(); ++i)
          out.push_back(models[i]->decode_step(states[i], tokens).to_vector<float>());
        for (std::size_t i = 0; i < out[0].size(); ++i) {
          worst = std::max(worst, std::abs(static_cast<double>(out[0][i]) - out[1][i]));
        }
        CHECK(out[2] == out[3]);  // exact int32 sums either way
        feed = {static_cast<std::int32_t>(4 + step), static_cast<std::int32_t>(5 + step)};
      }
      INFO("largest f32 log-probability difference " << worst);
      CHECK(worst < 1e-5);
    }
  }
}

TEST_CASE("discard_unread_weights: decoding unchanged, the pages given back, the loss and saving refused", "[model]") {
  for (const std::string& name : {std::string("post_shared_tied"), std::string("pre_untied_learned")}) {
    SECTION(name) {
      // Wide enough that the weights span whole pages.
      ModelConfig c = test::fixture_config(name);
      c.d_model = 64, c.d_ff = 256;
      if (name == "pre_untied_learned") c.d_k = 24, c.d_v = 20, c.tgt_vocab_size = 80;
      c.validate();
      for (const bool int8 : {false, true}) {
        INFO((int8 ? "int8" : "f32"));
        const auto make = [&c, int8] {
          Transformer m(c, ParameterPrecision::decoding(DType::kF32));
          m.initialize(5);
          m.refresh_compute_weights();
          if (int8) m.quantize_int8();
          m.pack_weights();
          return m;
        };
        Transformer kept = make(), discarded = make();
        CHECK_THROWS_WITH(Transformer(c, DType::kF32).discard_unread_weights(),
                          Catch::Contains("pack_weights comes first"));
        const std::size_t bytes = discarded.discard_unread_weights();
        // At least the q, k and v parts of the stacked layers (also where nothing is packed: a CPU
        // without AVX-512): every self-attention block's three 64 x 64 (or 72 x 64) f32 matrices and
        // every cross-attention's k and v, each 16 KiB or more, so at least 3 whole pages each.
        const std::int64_t parts = 3 * (c.encoder_layers + c.decoder_layers) + 2 * c.decoder_layers;
        CHECK(bytes >= static_cast<std::size_t>(parts * 3 * 4096));
        CHECK(discarded.weights_discarded());
        CHECK(discarded.discard_unread_weights() == 0);  // once
        const Batch batch = Batch::from_sentences({{5, 6, 7, 8}, {9, 4}}, {{4}, {5}}, c);
        CHECK_THROWS_WITH(discarded.loss(batch), Catch::Contains("given up for decoding"));
        CHECK_THROWS_WITH(model_to_safetensors(discarded, ModelFileInfo{}), Catch::Contains("cannot be saved"));
        DecoderState a = kept.start_decoding(kept.encode(batch.src, batch.src_lengths), batch.src_lengths, 6);
        DecoderState b = discarded.start_decoding(discarded.encode(batch.src, batch.src_lengths), batch.src_lengths, 6);
        std::vector<std::int32_t> feed(2, c.bos_id);
        for (int step = 0; step < 4; ++step) {
          const Tensor tokens = Tensor::from_vector(feed, {2});
          CHECK(kept.decode_step(a, tokens).to_vector<float>() == discarded.decode_step(b, tokens).to_vector<float>());
          feed = {static_cast<std::int32_t>(4 + step), static_cast<std::int32_t>(5 + step)};
        }
      }
    }
  }
}

TEST_CASE("Evaluation is deterministic and dropout depends only on seed and step", "[model]") {
  ModelConfig c = test::fixture_config("post_shared_tied");
  c.dropout = c.attention_dropout = c.relu_dropout = 0.2;
  Transformer model(c, DType::kF32);
  model.initialize(1);
  const Batch batch = Batch::from_sentences({{5, 6, 7, 8}, {9, 10}}, {{11, 12}, {13, 14, 15}}, c);
  const double eval1 = model.loss(batch).loss_sum;
  const double eval2 = model.loss(batch).loss_sum;
  CHECK(eval1 == eval2);
  const double train_a = model.loss(batch, {true, 42, 1}).loss_sum;
  const double train_b = model.loss(batch, {true, 42, 1}).loss_sum;
  const double train_next_step = model.loss(batch, {true, 42, 2}).loss_sum;
  const double train_other_seed = model.loss(batch, {true, 43, 1}).loss_sum;
  CHECK(train_a == train_b);
  CHECK(train_a != eval1);
  CHECK(train_next_step != train_a);
  CHECK(train_other_seed != train_a);
}

TEST_CASE("A tiny Transformer overfits one small batch", "[model]") {
  ModelConfig c = test::fixture_config("post_shared_tied");
  c.d_model = 32;
  c.d_ff = 64;
  c.heads = 4;
  c.label_smoothing = 0;
  c.dropout = 0;
  Transformer model(c, DType::kF32);
  model.initialize(2);
  // Copy and reverse tasks mixed, lengths 2 to 6.
  const Batch batch = Batch::from_sentences({{4, 5, 6, 7}, {8, 9}, {10, 11, 12, 13, 14, 15}, {16, 17, 18}},
                                            {{7, 6, 5, 4}, {8, 9}, {15, 14, 13, 12, 11, 10}, {16, 17, 18}}, c);
  ParameterSet& params = model.parameters();
  Tensor m = Tensor::zeros({params.size()}, DType::kF32), v = Tensor::zeros({params.size()}, DType::kF32);
  double first = 0, last = 0;
  for (int step = 1; step <= 150; ++step) {
    params.zero_grads();
    ForwardActivations saved;
    const LossResult r = model.forward_loss(batch, {true, 0, static_cast<std::uint64_t>(step)}, saved);
    model.backward(std::move(saved), 1.0 / static_cast<double>(r.tokens));
    ops::AdamHyper hyper;
    hyper.lr = 3e-3;
    hyper.step = step;
    ops::adam_step(params.values(), params.grads(), m, v, hyper);
    (step == 1 ? first : last) = r.loss_sum / static_cast<double>(r.tokens);
  }
  INFO("loss per token: first " << first << ", last " << last);
  CHECK(first > 2.5);
  CHECK(last < 0.05);
}

TEST_CASE("ModelConfig refuses invalid models with a clear message", "[model]") {
  const auto base = [] {
    ModelConfig c = ModelConfig::transformer_base();
    c.src_vocab_size = c.tgt_vocab_size = 1000;
    return c;
  };
  CHECK_NOTHROW(base().validate());
  ModelConfig c = base();
  c.heads = 7;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("not divisible by heads 7"));
  c.d_k = 64;
  c.d_v = 64;
  CHECK_NOTHROW(c.validate());  // explicit head sizes make any head count valid
  c = base();
  c.tgt_vocab_size = 999;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("share_embeddings needs one vocabulary"));
  c.share_embeddings = false;
  CHECK_NOTHROW(c.validate());
  c = base();
  c.d_model = 510;
  c.heads = 10;
  c.d_model = 511;
  c.d_k = c.d_v = 51;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("even d_model"));
  c = base();
  c.dropout = 1.0;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("dropout must be in [0, 1)"));
  c = base();
  c.eos_id = c.pad_id;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("must differ"));
  c = base();
  c.encoder_layers = 0;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("encoder_layers must be >= 1"));
  // The sinusoid table is sized by max_positions alone: a damaged config's 10^8 is refused
  // (fuzz_safetensors found it allocating 3.2 GB), the largest allowed is accepted.
  c = base();
  c.max_positions = 100000000;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("max_positions must be <= 65536, got 100000000"));
  c.max_positions = kMaxPositionsLimit;
  CHECK_NOTHROW(c.validate());

  nlohmann::json json = base().to_json();
  CHECK(ModelConfig::from_json(json, "x.json") == base());
  json["heads"] = "8";
  CHECK_THROWS_WITH(ModelConfig::from_json(json, "x.json"),
                    Catch::Contains("x.json: model config key 'heads' must be an integer"));
  json = base().to_json();
  json["n_heads"] = 8;
  CHECK_THROWS_WITH(ModelConfig::from_json(json, "x.json"), Catch::Contains("unknown model config key 'n_heads'"));
  json = base().to_json();
  json["norm"] = "middle";
  CHECK_THROWS_WITH(ModelConfig::from_json(json, "x.json"), Catch::Contains("\"post\" or \"pre\""));
}

TEST_CASE("The paper's models have the paper's parameter counts", "[model]") {
  // Table 3 lists 65M (base) and 213M (big) parameters for EN-DE with a shared ~37k vocabulary.
  ModelConfig base = ModelConfig::transformer_base();
  base.src_vocab_size = base.tgt_vocab_size = 37000;
  ModelConfig big = ModelConfig::transformer_big();
  big.src_vocab_size = big.tgt_vocab_size = 37000;
  std::int64_t n_base = 0, n_big = 0;
  for (const ParameterSpec& s : transformer_parameter_specs(base)) n_base += shape_numel(s.shape);
  for (const ParameterSpec& s : transformer_parameter_specs(big)) n_big += shape_numel(s.shape);
  // Ours: 63.1M and 214.2M (the paper's exact vocabulary size and rounding are not given): within 5%.
  CHECK(static_cast<double>(n_base) == Approx(65e6).epsilon(0.05));
  CHECK(static_cast<double>(n_big) == Approx(213e6).epsilon(0.05));
  CHECK(n_base == 63082496);  // 37000 * 512 + 6 * 3152384 + 6 * 4204032 (one embedding matrix, tied)
}

}  // namespace dragoman::model
