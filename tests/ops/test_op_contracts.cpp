// What every op promises: parameter gradients accumulate and activation gradients are assigned, and
// bad operands are rejected with an error naming the op.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/tensor.h"
#include "ops/adam.h"
#include "ops/attention.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;
using test::ids_tensor;
using test::random64;
using test::zeros64;

TEST_CASE("ops parameter gradients accumulate and activation gradients are assigned", "[ops]") {
  const Tensor x = random64({3, 4}, 110), w = random64({2, 4}, 111), r = random64({3, 2}, 112);
  Tensor dw = zeros64({2, 4}), db = zeros64({2});
  const Tensor dx1 = ops::linear_backward(x, w, r, dw, db);
  const std::vector<double> dw1 = dw.to_vector<double>(), db1 = db.to_vector<double>();
  const Tensor dx2 = ops::linear_backward(x, w, r, dw, db);
  CHECK(dx1.to_vector<double>() == dx2.to_vector<double>());
  const std::vector<double> dw2 = dw.to_vector<double>(), db2 = db.to_vector<double>();
  for (std::size_t i = 0; i < dw1.size(); ++i) CHECK(dw2[i] == Approx(2 * dw1[i]).margin(1e-15));
  for (std::size_t i = 0; i < db1.size(); ++i) CHECK(db2[i] == Approx(2 * db1[i]).margin(1e-15));

  const Tensor lw = random64({4}, 113, 0.5, 1.0), lb = random64({4}, 114);
  ops::LayerNormSaved saved;
  ops::layer_norm(x, lw, lb, 1e-5, &saved);
  Tensor dlw = zeros64({4}), dlb = zeros64({4});
  ops::layer_norm_backward(random64({3, 4}, 115), x, lw, saved, dlw, dlb);
  const std::vector<double> once = dlw.to_vector<double>();
  ops::layer_norm_backward(random64({3, 4}, 115), x, lw, saved, dlw, dlb);
  const std::vector<double> twice = dlw.to_vector<double>();
  for (std::size_t i = 0; i < once.size(); ++i) CHECK(twice[i] == Approx(2 * once[i]).margin(1e-15));

  const Tensor ids = ids_tensor({1, 1, 0}, {1, 3});
  Tensor dtable = zeros64({2, 4}), no_dpositions;
  const Tensor dout = random64({1, 3, 4}, 116);
  ops::embedding_backward(ids, dout, dtable, no_dpositions, 0, 1.0);
  ops::embedding_backward(ids, dout, dtable, no_dpositions, 0, 1.0);
  const std::vector<double> d = dout.to_vector<double>(), t = dtable.to_vector<double>();
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(t[i] == Approx(2 * d[8 + i]).margin(1e-15));
    CHECK(t[4 + i] == Approx(2 * (d[i] + d[4 + i])).margin(1e-15));
  }
}

TEST_CASE("ops reject mismatched shapes and dtypes with an error naming the op", "[ops]") {
  const Tensor x = random64({2, 3, 4}, 120), w = random64({5, 4}, 121), b = random64({5}, 122);
  const Tensor x32 = x.to(DType::kF32), w32 = w.to(DType::kF32), i32 = Tensor::zeros({3}, DType::kI32);
  const Tensor dy = random64({2, 3, 5}, 123);
  // Gradient operands: the ops throw before they write.
  Tensor dw = zeros64({5, 4}), db = zeros64({5}), dw_transposed = zeros64({4, 5}),
         db_f32 = Tensor::zeros({5}, DType::kF32);

  // linear and matmul
  DRAGOMAN_CHECK_OP_ERROR(ops::linear(x, random64({5, 3}, 124), b), "linear", "does not match weight");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear(x, w32, b), "linear", "weight");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear(x, w, zeros64({4})), "linear", "bias");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear(x, random64({4, 5}, 125).transpose(0, 1), b), "linear", "contiguous");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear_backward(x, w, dy, dw_transposed, db), "linear_backward", "dweight");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear_backward(x, w, random64({2, 3, 4}, 126), dw, db), "linear_backward", "dy");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear_backward(x, w32, dy, dw, db), "linear_backward", "weight");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear_backward(x, random64({4, 5}, 127).transpose(0, 1), dy, dw, db), "linear_backward",
                          "contiguous");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear_backward(x, w, dy, dw, db_f32), "linear_backward", "dbias");
  DRAGOMAN_CHECK_OP_ERROR(ops::matmul(w, w), "matmul", "inner dimensions differ");
  DRAGOMAN_CHECK_OP_ERROR(ops::matmul(w, w32, false, true), "matmul", "b");
  DRAGOMAN_CHECK_OP_ERROR(ops::matmul(x, w), "matmul", "2-D");

  // element-wise
  DRAGOMAN_CHECK_OP_ERROR(ops::add(x, w), "add", "sizes differ");
  DRAGOMAN_CHECK_OP_ERROR(ops::add(x, x32), "add", "expected F64");
  Tensor y = x.clone();
  DRAGOMAN_CHECK_OP_ERROR(ops::add_(y, b), "add_", "sizes differ");
  DRAGOMAN_CHECK_OP_ERROR(ops::relu(i32), "relu", "expected an f32");
  DRAGOMAN_CHECK_OP_ERROR(ops::relu_backward(x, x32), "relu_backward", "");
  DRAGOMAN_CHECK_OP_ERROR(ops::dropout(x, 1.0, 0, 0), "dropout", "[0, 1)");
  DRAGOMAN_CHECK_OP_ERROR(ops::sum_squares(x.transpose(0, 1)), "sum_squares", "contiguous");

  // layer norm
  const Tensor lw = random64({4}, 128), lb = random64({4}, 129);
  DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm(x, random64({5}, 130), lb, 1e-5, nullptr), "layer_norm", "weight");
  DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm(x, lw, lb.to(DType::kF32), 1e-5, nullptr), "layer_norm", "bias");
  ops::LayerNormSaved saved;
  ops::layer_norm(x, lw, lb, 1e-5, &saved);
  const Tensor dx = random64({2, 3, 4}, 131);
  Tensor dlw = zeros64({4}), dlb = zeros64({4}), dlw_long = zeros64({5}), dlw_f32 = Tensor::zeros({4}, DType::kF32);
  DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward(dx, x, lw, saved, dlw_long, dlb), "layer_norm_backward", "dweight");
  DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward(random64({2, 4, 3}, 132), x, lw, saved, dlw, dlb),
                          "layer_norm_backward", "dy");
  DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward(dx, x, lw, saved, dlw_f32, dlb), "layer_norm_backward", "dweight");
  DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward(dx, x, lw.to(DType::kF32), saved, dlw, dlb), "layer_norm_backward",
                          "weight");

  // attention
  const Tensor q = random64({2, 3, 4}, 133), k = random64({2, 5, 4}, 134), v = random64({2, 5, 6}, 135);
  const Tensor lengths = ids_tensor({5, 4}, {2});
  ops::AttentionOptions options;
  options.heads = 2;
  DRAGOMAN_CHECK_OP_ERROR(ops::attention(q, random64({2, 5, 6}, 136), v, lengths, options, nullptr), "attention",
                          "head sizes");
  DRAGOMAN_CHECK_OP_ERROR(ops::attention(q, k, random64({2, 4, 6}, 137), lengths, options, nullptr), "attention",
                          "key counts");
  DRAGOMAN_CHECK_OP_ERROR(ops::attention(q, k.to(DType::kF32), v, lengths, options, nullptr), "attention",
                          "operands differ");
  DRAGOMAN_CHECK_OP_ERROR(ops::attention(q, k, v, lengths.to(DType::kF64), options, nullptr), "attention",
                          "key_lengths");
  DRAGOMAN_CHECK_OP_ERROR(ops::attention(q, k, v, ids_tensor({5, 4, 3}, {3}), options, nullptr), "attention",
                          "key_lengths");
  DRAGOMAN_CHECK_OP_ERROR(ops::attention(q.narrow(1, 0, 2), k, v, lengths, options, nullptr), "attention",
                          "contiguous");
  DRAGOMAN_CHECK_OP_ERROR(ops::attention(q.view({2, 12}), k, v, lengths, options, nullptr), "attention", "[B, rows");
  options.dropout = 1.0;
  DRAGOMAN_CHECK_OP_ERROR(ops::attention(q, k, v, lengths, options, nullptr), "attention", "dropout");
  options.dropout = 0;
  options.heads = 3;
  DRAGOMAN_CHECK_OP_ERROR(ops::attention(q, k, v, lengths, options, nullptr), "attention", "head sizes");
  options.heads = 2;
  ops::AttentionSaved asaved;
  ops::attention(q, k, v, lengths, options, &asaved);
  DRAGOMAN_CHECK_OP_ERROR(ops::attention_backward(q, k, v, lengths, options, asaved, random64({2, 3, 4}, 138)),
                          "attention_backward", "dout");
  DRAGOMAN_CHECK_OP_ERROR(
      ops::attention_backward(q, k, v, lengths, options, asaved, random64({2, 3, 6}, 139).to(DType::kF32)),
      "attention_backward", "dout");
  ops::AttentionSaved wrong{zeros64({2, 2, 4})};  // T = 4, not 3
  DRAGOMAN_CHECK_OP_ERROR(ops::attention_backward(q, k, v, lengths, options, wrong, random64({2, 3, 6}, 140)),
                          "attention_backward", "lse");

  // cross-entropy
  Tensor logits = random64({3, 5}, 141);
  DRAGOMAN_CHECK_OP_ERROR(ops::cross_entropy_(logits, ids_tensor({1, 2}, {2}), 0, 0.1), "cross_entropy_", "targets");
  DRAGOMAN_CHECK_OP_ERROR(ops::cross_entropy_(logits, ids_tensor({1, 2, 5}, {3}), 0, 0.1), "cross_entropy_",
                          "target id 5");
  DRAGOMAN_CHECK_OP_ERROR(ops::cross_entropy_(logits, Tensor::zeros({3}, DType::kF32), 0, 0.1), "cross_entropy_",
                          "targets");
  Tensor logits3 = random64({1, 3, 5}, 142);
  DRAGOMAN_CHECK_OP_ERROR(ops::cross_entropy_(logits3, ids_tensor({1, 2, 3}, {3}), 0, 0.1), "cross_entropy_", "[N, V]");
  DRAGOMAN_CHECK_OP_ERROR(ops::cross_entropy_fused_(logits, ids_tensor({1, -1, 2}, {3}), 0, 0.1),
                          "cross_entropy_fused_", "target id -1");
  Tensor ints = Tensor::zeros({2, 3}, DType::kI32);
  DRAGOMAN_CHECK_OP_ERROR(ops::log_softmax_(ints), "log_softmax_", "expected an f32");

  // Adam
  Tensor param = random64({4}, 143), m = zeros64({4}), vv = zeros64({4});
  ops::AdamHyper hyper;
  DRAGOMAN_CHECK_OP_ERROR(ops::adam_step(param, zeros64({3}), m, vv, hyper), "adam_step", "sizes differ");
  DRAGOMAN_CHECK_OP_ERROR(ops::adam_step(param, Tensor::zeros({4}, DType::kF32), m, vv, hyper), "adam_step", "state");
  hyper.step = 0;
  DRAGOMAN_CHECK_OP_ERROR(ops::adam_step(param, zeros64({4}), m, vv, hyper), "adam_step", "step");

  // positions
  DRAGOMAN_CHECK_OP_ERROR(ops::sinusoidal_positions(4, 5, DType::kF64), "sinusoidal_positions", "even");
  DRAGOMAN_CHECK_OP_ERROR(ops::sinusoidal_positions(4, 6, DType::kI32), "sinusoidal_positions", "expected an f32");
}

}  // namespace dragoman
