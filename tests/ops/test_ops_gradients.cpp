// The backward pass of every Tensor-level op (dragoman::ops) and of the model's building blocks
// (model/layers.h) against float64 central finite differences: for a fixed random R, the loss
// sum(output * R) is differentiated numerically with respect to every element of every input and
// parameter, and compared with the analytic gradient computed with dy = R (relative error below
// 1e-7). Covers linear, relu, dropout, layer norm, attention (padding, causal, attention dropout,
// three heads with K != Kv and T != S, a query offset), embeddings with learned positions, the
// label-smoothed cross-entropy, the feed-forward and attention blocks and both residual
// placements. Also checks the gradient conventions (activation gradients assigned, parameter
// gradients accumulated) and that the ops reject bad operands with an error naming the op.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "model/layers.h"
#include "model/model_testing.h"
#include "ops/adam.h"
#include "ops/attention.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"

// Checks that `expr` throws a dragoman::Error whose message starts with "OP: " and contains `fragment`.
#define DRAGOMAN_CHECK_OP_ERROR(expr, op, fragment)                                                  \
  do {                                                                                               \
    CHECK_THROWS_AS(expr, Error);                                                                    \
    CHECK_THROWS_WITH(expr, Catch::StartsWith(std::string(op) + ": ") && Catch::Contains(fragment)); \
  } while (false)

namespace dragoman {
namespace {

using std::int64_t;

// f64 values uniform in [offset - scale, offset + scale).
Tensor random64(const Shape& shape, std::uint64_t rng_stream, double scale = 1.0, double offset = 0.0) {
  Tensor t = test::random_tensor(shape, DType::kF64, rng_stream, scale);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] += offset;
  return t;
}

Tensor zeros64(const Shape& shape) { return Tensor::zeros(shape, DType::kF64); }

Tensor ids_tensor(const std::vector<std::int32_t>& ids, const Shape& shape) { return Tensor::from_vector(ids, shape); }

// sum(a * r) over all elements.
double dot(const Tensor& a, const Tensor& r) {
  REQUIRE(a.shape() == r.shape());
  const std::vector<double> av = a.to_vector<double>(), rv = r.to_vector<double>();
  double s = 0;
  for (std::size_t i = 0; i < av.size(); ++i) s += av[i] * rv[i];
  return s;
}

// Every element of `param` against central differences of `loss`; the analytic gradient must not
// be identically zero (a test that compares 0 with 0 checks nothing) unless `may_be_zero`.
void check_gradient(const std::string& what, const std::function<double()>& loss, const Tensor& param,
                    const Tensor& grad, bool may_be_zero = false) {
  INFO(what << " " << param.describe());
  REQUIRE(grad.defined());
  REQUIRE(grad.shape() == param.shape());
  const test::GradientCheck check = test::check_gradient(loss, param, grad);
  INFO("worst element " << check.worst_index << ": numeric " << check.numeric << ", analytic " << check.analytic);
  CHECK(check.checked == param.numel());
  CHECK(check.worst_error < 1e-7);
  if (!may_be_zero) CHECK(ops::sum_squares(grad.contiguous()) > 0);
}

model::Linear make_linear(int64_t out, int64_t in, std::uint64_t rng_stream) {
  return {random64({out, in}, rng_stream, 0.6), random64({out}, rng_stream + 1, 0.3), zeros64({out, in}), zeros64({out})};
}

void zero_grads(model::Linear& l) {
  l.dweight.fill_zero();
  l.dbias.fill_zero();
}

void check_linear(const std::string& what, const std::function<double()>& loss, const model::Linear& l) {
  check_gradient(what + ".weight", loss, l.weight, l.dweight);
  check_gradient(what + ".bias", loss, l.bias, l.dbias);
}

}  // namespace

// ---- single ops ---------------------------------------------------------------------------------

TEST_CASE("ops::linear gradients match finite differences", "[ops]") {
  const Tensor x = random64({2, 3, 4}, 1), w = random64({5, 4}, 2), b = random64({5}, 3);
  const Tensor r = random64({2, 3, 5}, 4);
  const auto loss = [&] { return dot(ops::linear(x, w, b), r); };
  Tensor dw = zeros64({5, 4}), db = zeros64({5});
  const Tensor dx = ops::linear_backward(x, w, r, dw, db);
  check_gradient("x", loss, x, dx);
  check_gradient("weight", loss, w, dw);
  check_gradient("bias", loss, b, db);

  SECTION("without a bias") {
    const auto loss_nb = [&] { return dot(ops::linear(x, w, Tensor()), r); };
    dw.fill_zero();
    const Tensor dx_nb = ops::linear_backward(x, w, r, dw, Tensor());
    check_gradient("x", loss_nb, x, dx_nb);
    check_gradient("weight", loss_nb, w, dw);
    CHECK_FALSE(ops::linear_backward(x, w, r, dw, Tensor(), /*need_dx=*/false).defined());
  }
}

TEST_CASE("ops::matmul equals the naive product for every transpose flag", "[ops]") {
  const Tensor a = random64({3, 4}, 5), b = random64({4, 2}, 6);
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> expected(6, 0.0);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int p = 0; p < 4; ++p) expected[static_cast<std::size_t>(i * 2 + j)] += av[i * 4 + p] * bv[p * 2 + j];
    }
  }
  const Tensor at = a.transpose(0, 1).contiguous(), bt = b.transpose(0, 1).contiguous();
  for (const Tensor& c : {ops::matmul(a, b), ops::matmul(at, b, true, false), ops::matmul(a, bt, false, true),
                          ops::matmul(at, bt, true, true)}) {
    REQUIRE(c.shape() == Shape{3, 2});
    const std::vector<double> cv = c.to_vector<double>();
    for (std::size_t i = 0; i < cv.size(); ++i) CHECK(cv[i] == Approx(expected[i]).margin(1e-14));
  }
}

TEST_CASE("ops::relu gradients match finite differences", "[ops]") {
  const Tensor x = random64({3, 7}, 10), r = random64({3, 7}, 11);
  const auto loss = [&] { return dot(ops::relu(x), r); };
  const Tensor dx = ops::relu_backward(ops::relu(x), r);
  check_gradient("x", loss, x, dx);
}

TEST_CASE("ops::dropout gradients match finite differences", "[ops]") {
  const Tensor x = random64({4, 6}, 12), r = random64({4, 6}, 13);
  const double p = 0.3;
  const auto loss = [&] { return dot(ops::dropout(x, p, 21, 22), r); };
  const Tensor dx = ops::dropout(r, p, 21, 22);  // the backward pass: the same mask on the gradient
  check_gradient("x", loss, x, dx);
  const std::vector<double> y = ops::dropout(x, p, 21, 22).to_vector<double>();
  CHECK(std::count(y.begin(), y.end(), 0.0) > 0);  // the mask does drop something here
  CHECK(ops::dropout(x, 0.0, 21, 22).shares_storage(x));
}

TEST_CASE("ops::layer_norm gradients match finite differences", "[ops]") {
  const Tensor x = random64({2, 3, 6}, 14, 1.0, 0.5);
  const Tensor w = random64({6}, 15, 0.5, 1.0), b = random64({6}, 16, 0.5);
  const Tensor r = random64({2, 3, 6}, 17);
  const double eps = 1e-5;
  const auto loss = [&] { return dot(ops::layer_norm(x, w, b, eps, nullptr), r); };
  ops::LayerNormSaved saved;
  ops::layer_norm(x, w, b, eps, &saved);
  CHECK(saved.mean.shape() == Shape{6});
  Tensor dw = zeros64({6}), db = zeros64({6});
  const Tensor dx = ops::layer_norm_backward(r, x, w, saved, dw, db);
  check_gradient("x", loss, x, dx);
  check_gradient("weight", loss, w, dw);
  check_gradient("bias", loss, b, db);
}

TEST_CASE("ops::attention gradients match finite differences", "[ops]") {
  struct Case {
    const char* name;
    int64_t batch, heads, queries, keys, key_size, value_size;
    std::vector<std::int32_t> lengths;
    bool causal;
    int64_t query_offset;
    double dropout;
  };
  const std::vector<Case> cases = {
      {"key padding with different lengths", 3, 2, 4, 5, 3, 3, {5, 2, 1}, false, 0, 0.0},
      {"causal", 2, 2, 5, 5, 2, 2, {5, 3}, true, 0, 0.0},
      {"attention dropout", 2, 2, 3, 4, 3, 2, {4, 3}, false, 0, 0.2},
      {"three heads, K != Kv and T != S", 2, 3, 2, 4, 2, 3, {4, 3}, false, 0, 0.0},
      {"causal with a query offset", 2, 2, 2, 5, 2, 3, {5, 4}, true, 3, 0.0},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const int64_t B = c.batch, H = c.heads;
      const Tensor q = random64({B, c.queries, H * c.key_size}, 30, 1.5);
      const Tensor k = random64({B, c.keys, H * c.key_size}, 31, 1.5);
      const Tensor v = random64({B, c.keys, H * c.value_size}, 32);
      const Tensor r = random64({B, c.queries, H * c.value_size}, 33);
      const Tensor lengths = ids_tensor(c.lengths, {B});
      ops::AttentionOptions options;
      options.heads = H;
      options.causal = c.causal;
      options.query_offset = c.query_offset;
      options.dropout = c.dropout;
      options.seed = 17;
      options.rng_stream = 3;
      const auto loss = [&] { return dot(ops::attention(q, k, v, lengths, options, nullptr), r); };
      ops::AttentionSaved saved;
      ops::attention(q, k, v, lengths, options, &saved);
      CHECK(saved.lse.shape() == Shape{B, H, c.queries});  // all the backward pass keeps
      const ops::AttentionGrads g = ops::attention_backward(q, k, v, lengths, options, saved, r);
      check_gradient("q", loss, q, g.dq);
      check_gradient("k", loss, k, g.dk);
      check_gradient("v", loss, v, g.dv);
    }
  }
}

TEST_CASE("ops::attention reads k and v through strided cache views", "[ops]") {
  // A [B, P, H*K] cache narrowed to its first S rows gives what contiguous k and v give.
  const int64_t B = 2, H = 2, K = 3, P = 6, S = 4;
  const Tensor k_cache = random64({B, P, H * K}, 40), v_cache = random64({B, P, H * K}, 41);
  const Tensor k = k_cache.narrow(1, 0, S), v = v_cache.narrow(1, 0, S);
  REQUIRE_FALSE(k.is_contiguous());
  const Tensor q = random64({B, 1, H * K}, 42), r = random64({B, 1, H * K}, 43);
  const Tensor lengths = ids_tensor({S, S - 1}, {B});
  ops::AttentionOptions options;
  options.heads = H;
  options.causal = true;
  options.query_offset = S - 1;
  ops::AttentionSaved saved, saved_c;
  const Tensor out = ops::attention(q, k, v, lengths, options, &saved);
  const Tensor out_c = ops::attention(q, k.contiguous(), v.contiguous(), lengths, options, &saved_c);
  CHECK(out.to_vector<double>() == out_c.to_vector<double>());
  const ops::AttentionGrads g = ops::attention_backward(q, k, v, lengths, options, saved, r);
  const ops::AttentionGrads gc =
      ops::attention_backward(q, k.contiguous(), v.contiguous(), lengths, options, saved_c, r);
  CHECK(g.dq.to_vector<double>() == gc.dq.to_vector<double>());
  CHECK(g.dk.to_vector<double>() == gc.dk.to_vector<double>());
  CHECK(g.dv.to_vector<double>() == gc.dv.to_vector<double>());
  CHECK(g.dk.shape() == k.shape());
}

TEST_CASE("ops::embedding gradients match finite differences", "[ops]") {
  const int64_t V = 6, D = 5, P = 9, offset = 2;
  const Tensor ids = ids_tensor({3, 1, 3, 0, 5, 3, 1, 1}, {2, 4});  // repeated ids; 2 and 4 unused
  const Tensor table = random64({V, D}, 50), positions = random64({P, D}, 51);
  const Tensor r = random64({2, 4, D}, 52);
  const double scale = std::sqrt(static_cast<double>(D));

  SECTION("table and learned positions") {
    const auto loss = [&] { return dot(ops::embedding(ids, table, positions, offset, scale), r); };
    Tensor dtable = zeros64({V, D}), dpositions = zeros64({P, D});
    ops::embedding_backward(ids, r, dtable, dpositions, offset, scale);
    check_gradient("table", loss, table, dtable);
    check_gradient("positions", loss, positions, dpositions);
    // Unused ids and positions outside [offset, offset + L) get exactly zero.
    const std::vector<double> dt = dtable.to_vector<double>(), dp = dpositions.to_vector<double>();
    for (int64_t i = 0; i < D; ++i) {
      CHECK(dt[static_cast<std::size_t>(2 * D + i)] == 0.0);
      CHECK(dp[static_cast<std::size_t>(1 * D + i)] == 0.0);
      CHECK(dp[static_cast<std::size_t>(6 * D + i)] == 0.0);
    }
  }
  SECTION("table only") {
    const auto loss = [&] { return dot(ops::embedding(ids, table, Tensor(), 0, scale), r); };
    Tensor dtable = zeros64({V, D});
    ops::embedding_backward(ids, r, dtable, Tensor(), 0, scale);
    check_gradient("table", loss, table, dtable);
  }
}

TEST_CASE("ops::cross_entropy_fused_ gives cross_entropy_'s sums and their gradient (finite differences)", "[ops]") {
  const std::int32_t pad = 0;
  const Tensor logits = random64({5, 7}, 60, 2.0);
  const Tensor targets = ids_tensor({3, pad, 6, 3, 1}, {5});  // row 1 is padding
  for (const double smoothing : {0.1, 0.0}) {
    INFO("smoothing " << smoothing);
    const auto loss = [&] {
      Tensor l = logits.clone();
      return ops::cross_entropy_(l, targets, pad, smoothing).loss;
    };
    Tensor log_probs = logits.clone(), grad = logits.clone();
    const ops::CrossEntropySums sums = ops::cross_entropy_(log_probs, targets, pad, smoothing);
    const ops::CrossEntropySums fused = ops::cross_entropy_fused_(grad, targets, pad, smoothing);
    CHECK(fused.loss == sums.loss);
    CHECK(fused.nll == sums.nll);
    if (smoothing == 0) CHECK(sums.loss == Approx(sums.nll).margin(1e-14));
    check_gradient("logits", loss, logits, grad);
    const std::vector<double> gv = grad.to_vector<double>();
    for (std::size_t k = 7; k < 14; ++k) CHECK(gv[k] == 0.0);  // the pad row
  }
}

// ---- model blocks (model/layers.h) --------------------------------------------------------------

TEST_CASE("model feed_forward backward matches finite differences", "[ops]") {
  const int64_t D = 4, F = 6;
  model::FeedForwardParams p{make_linear(F, D, 70), make_linear(D, F, 72)};
  const Tensor x = random64({2, 3, D}, 74), r = random64({2, 3, D}, 75);
  const model::Dropout relu_dropout{0.2, 9, 10};
  const auto loss = [&] { return dot(model::feed_forward_forward(p, x, relu_dropout, nullptr), r); };
  model::FeedForwardActivations act;
  model::feed_forward_forward(p, x, relu_dropout, &act);
  zero_grads(p.fc1);
  zero_grads(p.fc2);
  const Tensor dx = model::feed_forward_backward(p, act, r);
  check_gradient("x", loss, x, dx);
  check_linear("fc1", loss, p.fc1);
  check_linear("fc2", loss, p.fc2);
}

TEST_CASE("model attention backward matches finite differences", "[ops]") {
  const int64_t D = 6, H = 2, K = 2, Kv = 3;
  model::AttentionParams p{make_linear(H * K, D, 80), make_linear(H * K, D, 82), make_linear(H * Kv, D, 84),
                           make_linear(D, H * Kv, 86)};
  const auto zero_all = [&] {
    for (model::Linear* l : {&p.q, &p.k, &p.v, &p.out}) zero_grads(*l);
  };
  const auto check_params = [&](const std::function<double()>& loss) {
    check_linear("q", loss, p.q);
    check_linear("k", loss, p.k);
    check_linear("v", loss, p.v);
    check_linear("out", loss, p.out);
  };

  SECTION("causal self-attention with padding and attention dropout") {
    const Tensor x = random64({2, 4, D}, 88), r = random64({2, 4, D}, 89);
    const Tensor lengths = ids_tensor({4, 3}, {2});
    ops::AttentionOptions options;
    options.heads = H;
    options.causal = true;
    options.dropout = 0.1;
    options.seed = 5;
    options.rng_stream = 6;
    const auto loss = [&] { return dot(model::attention_forward(p, x, x, lengths, options, nullptr), r); };
    model::AttentionActivations act;
    model::attention_forward(p, x, x, lengths, options, &act);
    zero_all();
    const model::AttentionInputGrads g = model::attention_backward(p, act, r);
    check_gradient("x", loss, x, ops::add(g.dxq, g.dxkv));  // x is both the query and the memory
    check_params(loss);
  }
  SECTION("cross-attention with key padding") {
    const Tensor xq = random64({2, 3, D}, 90), xkv = random64({2, 5, D}, 91), r = random64({2, 3, D}, 92);
    const Tensor lengths = ids_tensor({5, 2}, {2});
    ops::AttentionOptions options;
    options.heads = H;
    const auto loss = [&] { return dot(model::attention_forward(p, xq, xkv, lengths, options, nullptr), r); };
    model::AttentionActivations act;
    model::attention_forward(p, xq, xkv, lengths, options, &act);
    zero_all();
    const model::AttentionInputGrads g = model::attention_backward(p, act, r);
    check_gradient("xq", loss, xq, g.dxq);
    check_gradient("xkv", loss, xkv, g.dxkv);
    check_params(loss);
  }
}

TEST_CASE("model residual backward matches finite differences for post- and pre-norm", "[ops]") {
  const int64_t D = 4, F = 5;
  const double eps = 1e-5;
  for (const NormPlacement placement : {NormPlacement::kPost, NormPlacement::kPre}) {
    SECTION(placement == NormPlacement::kPost ? "post-norm" : "pre-norm") {
      model::FeedForwardParams ffn{make_linear(F, D, 100), make_linear(D, F, 102)};
      model::LayerNormParams norm{random64({D}, 104, 0.5, 1.0), random64({D}, 105, 0.5), zeros64({D}), zeros64({D})};
      const Tensor x = random64({2, 3, D}, 106), r = random64({2, 3, D}, 107);
      const model::Dropout dropout{0.1, 11, 12};
      const auto loss = [&] {
        const Tensor y = model::residual_forward(placement, norm, eps, x, dropout, nullptr, [&](const Tensor& in) {
          return model::feed_forward_forward(ffn, in, model::Dropout{}, nullptr);
        });
        return dot(y, r);
      };
      model::ResidualActivations act;
      model::FeedForwardActivations ffn_act;
      model::residual_forward(placement, norm, eps, x, dropout, &act, [&](const Tensor& in) {
        return model::feed_forward_forward(ffn, in, model::Dropout{}, &ffn_act);
      });
      zero_grads(ffn.fc1);
      zero_grads(ffn.fc2);
      norm.dweight.fill_zero();
      norm.dbias.fill_zero();
      const Tensor dx = model::residual_backward(
          placement, norm, act, r, [&](const Tensor& dy) { return model::feed_forward_backward(ffn, ffn_act, dy); });
      check_gradient("x", loss, x, dx);
      check_gradient("norm.weight", loss, norm.weight, norm.dweight);
      check_gradient("norm.bias", loss, norm.bias, norm.dbias);
      check_linear("fc1", loss, ffn.fc1);
      check_linear("fc2", loss, ffn.fc2);
    }
  }
}

// ---- conventions and errors ---------------------------------------------------------------------

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
  Tensor dtable = zeros64({2, 4});
  const Tensor dout = random64({1, 3, 4}, 116);
  ops::embedding_backward(ids, dout, dtable, Tensor(), 0, 1.0);
  ops::embedding_backward(ids, dout, dtable, Tensor(), 0, 1.0);
  const std::vector<double> d = dout.to_vector<double>(), t = dtable.to_vector<double>();
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(t[i] == Approx(2 * d[8 + i]).margin(1e-15));
    CHECK(t[4 + i] == Approx(2 * (d[i] + d[4 + i])).margin(1e-15));
  }
}

TEST_CASE("ops reject mismatched shapes and dtypes with an error naming the op", "[ops]") {
  const Tensor x = random64({2, 3, 4}, 120), w = random64({5, 4}, 121), b = random64({5}, 122);
  const Tensor x32 = x.to(DType::kF32), w32 = w.to(DType::kF32), i32 = Tensor::zeros({3}, DType::kI32);
  const Tensor dw = zeros64({5, 4}), db = zeros64({5}), dy = random64({2, 3, 5}, 123);

  // linear and matmul
  DRAGOMAN_CHECK_OP_ERROR(ops::linear(x, random64({5, 3}, 124), b), "linear", "does not match weight");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear(x, w32, b), "linear", "weight");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear(x, w, zeros64({4})), "linear", "bias");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear(x, random64({4, 5}, 125).transpose(0, 1), b), "linear", "contiguous");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear_backward(x, w, dy, zeros64({4, 5}), db), "linear_backward", "dweight");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear_backward(x, w, random64({2, 3, 4}, 126), dw, db), "linear_backward", "dy");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear_backward(x, w32, dy, dw, db), "linear_backward", "weight");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear_backward(x, random64({4, 5}, 127).transpose(0, 1), dy, dw, db), "linear_backward",
                          "contiguous");
  DRAGOMAN_CHECK_OP_ERROR(ops::linear_backward(x, w, dy, dw, Tensor::zeros({5}, DType::kF32)), "linear_backward",
                          "dbias");
  DRAGOMAN_CHECK_OP_ERROR(ops::matmul(w, w), "matmul", "inner dimensions differ");
  DRAGOMAN_CHECK_OP_ERROR(ops::matmul(w, w32, false, true), "matmul", "b");
  DRAGOMAN_CHECK_OP_ERROR(ops::matmul(x, w), "matmul", "2-D");

  // element-wise
  DRAGOMAN_CHECK_OP_ERROR(ops::add(x, w), "add", "sizes differ");
  DRAGOMAN_CHECK_OP_ERROR(ops::add(x, x32), "add", "expected F64");
  Tensor y = x.clone();
  DRAGOMAN_CHECK_OP_ERROR(ops::add_(y, b), "add_", "sizes differ");
  DRAGOMAN_CHECK_OP_ERROR(ops::relu(i32), "relu", "f32 or f64");
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
  DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward(dx, x, lw, saved, zeros64({5}), zeros64({4})), "layer_norm_backward",
                          "dweight");
  DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward(random64({2, 4, 3}, 132), x, lw, saved, zeros64({4}), zeros64({4})),
                          "layer_norm_backward", "dy");
  DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward(dx, x, lw, saved, Tensor::zeros({4}, DType::kF32), zeros64({4})),
                          "layer_norm_backward", "dweight");
  DRAGOMAN_CHECK_OP_ERROR(ops::layer_norm_backward(dx, x, lw.to(DType::kF32), saved, zeros64({4}), zeros64({4})),
                          "layer_norm_backward", "weight");

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
  DRAGOMAN_CHECK_OP_ERROR(ops::log_softmax_(ints), "log_softmax_", "f32 or f64");

  // Adam
  Tensor param = random64({4}, 143), m = zeros64({4}), vv = zeros64({4});
  cpu::AdamHyper hyper;
  DRAGOMAN_CHECK_OP_ERROR(ops::adam_step(param, zeros64({3}), m, vv, hyper), "adam_step", "sizes differ");
  DRAGOMAN_CHECK_OP_ERROR(ops::adam_step(param, Tensor::zeros({4}, DType::kF32), m, vv, hyper), "adam_step", "state");
  hyper.step = 0;
  DRAGOMAN_CHECK_OP_ERROR(ops::adam_step(param, zeros64({4}), m, vv, hyper), "adam_step", "step");

  // positions
  DRAGOMAN_CHECK_OP_ERROR(ops::sinusoidal_positions(4, 5, DType::kF64), "sinusoidal_positions", "even");
  DRAGOMAN_CHECK_OP_ERROR(ops::sinusoidal_positions(4, 6, DType::kI32), "sinusoidal_positions", "f32 or f64");
}

TEST_CASE("ops::embedding rejects out-of-range ids and positions", "[ops]") {
  const Tensor table = random64({6, 3}, 150), positions = random64({4, 3}, 151);
  DRAGOMAN_CHECK_OP_ERROR(ops::embedding(ids_tensor({1, 6}, {1, 2}), table, Tensor(), 0, 1.0), "embedding",
                          "token id 6 is outside the vocabulary [0, 6)");
  DRAGOMAN_CHECK_OP_ERROR(ops::embedding(ids_tensor({-1, 2}, {1, 2}), table, Tensor(), 0, 1.0), "embedding",
                          "token id -1");
  DRAGOMAN_CHECK_OP_ERROR(ops::embedding(ids_tensor({1, 2, 3}, {1, 3}), table, positions, 2, 1.0), "embedding",
                          "exceed max_positions 4");
  DRAGOMAN_CHECK_OP_ERROR(ops::embedding(ids_tensor({1, 2}, {2}), table, Tensor(), 0, 1.0), "embedding", "[B, L]");
  DRAGOMAN_CHECK_OP_ERROR(ops::embedding(ids_tensor({1, 2}, {1, 2}), table, random64({4, 2}, 152), 0, 1.0), "embedding",
                          "do not match table");
  DRAGOMAN_CHECK_OP_ERROR(ops::embedding(ids_tensor({1, 2}, {1, 2}), table, positions.to(DType::kF32), 0, 1.0),
                          "embedding", "positions");
  // The backward pass checks the same, and the shape of dout.
  Tensor dtable = zeros64({6, 3});
  DRAGOMAN_CHECK_OP_ERROR(
      ops::embedding_backward(ids_tensor({7, 2}, {1, 2}), zeros64({1, 2, 3}), dtable, Tensor(), 0, 1.0),
      "embedding_backward", "token id 7");
  DRAGOMAN_CHECK_OP_ERROR(
      ops::embedding_backward(ids_tensor({1, 2}, {1, 2}), zeros64({1, 3, 3}), dtable, Tensor(), 0, 1.0),
      "embedding_backward", "dout");
  // A valid call still works after the failures, and leaves dtable untouched by them.
  CHECK(dtable.to_vector<double>() == std::vector<double>(18, 0.0));
  CHECK(ops::embedding(ids_tensor({5, 0}, {1, 2}), table, positions, 2, 1.0).shape() == Shape{1, 2, 3});
}

}  // namespace dragoman
