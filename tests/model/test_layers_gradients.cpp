// The model's building blocks (model/layers.h) against float64 central finite differences: for a
// fixed random R, the loss sum(output * R) is differentiated numerically with respect to every
// element of every input and parameter, and compared with the analytic gradient computed with
// dy = R. Covers the feed-forward and attention blocks and both residual placements.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/layers.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/op_testing.h"

namespace dragoman::model {

using std::int64_t;
using test::check_gradient;
using test::dot;
using test::ids_tensor;
using test::random64;
using test::zeros64;

namespace {

model::Linear make_linear(int64_t out, int64_t in, std::uint64_t rng_stream) {
  model::Linear linear;
  linear.weight = random64({out, in}, rng_stream, 0.6);
  linear.bias = random64({out}, rng_stream + 1, 0.3);
  linear.dweight = zeros64({out, in});
  linear.dbias = zeros64({out});
  return linear;
}

void zero_grads(model::Linear& l) {
  l.dweight.fill_zero();
  l.dbias.fill_zero();
}

void check_linear(const std::string& what, const std::function<double()>& loss, model::Linear& l) {
  check_gradient(what + ".weight", loss, l.weight, l.dweight);
  check_gradient(what + ".bias", loss, l.bias, l.dbias);
}

}  // namespace

// ---- model blocks (model/layers.h) --------------------------------------------------------------

TEST_CASE("model feed_forward backward matches finite differences for ReLU and Swish", "[ops]") {
  const Activation activation = GENERATE(Activation::kRelu, Activation::kSwish);
  // 0: ReLU's gradient through linear_backward_relu (nothing between the ReLU and fc2).
  const double p_drop = GENERATE(0.2, 0.0);
  INFO((activation == Activation::kRelu ? "relu" : "swish") << ", relu dropout " << p_drop);
  const int64_t D = 4, F = 6;
  model::FeedForwardParams p{make_linear(F, D, 70), make_linear(D, F, 72), activation};
  Tensor x = random64({2, 3, D}, 74);  // perturbed by check_gradient
  const Tensor r = random64({2, 3, D}, 75);
  const model::Dropout relu_dropout{p_drop, 9, 10};
  const auto loss = [&] { return dot(model::feed_forward_forward(p, x, relu_dropout, nullptr), r); };
  model::FeedForwardActivations act;
  model::feed_forward_forward(p, x, relu_dropout, &act);
  zero_grads(p.fc1);
  zero_grads(p.fc2);
  Tensor dx;
  model::feed_forward_backward(p, act, r, dx);
  check_gradient("x", loss, x, dx);
  check_linear("fc1", loss, p.fc1);
  check_linear("fc2", loss, p.fc2);
}

TEST_CASE("model attention backward matches finite differences", "[ops]") {
  const int64_t D = 6, H = 2, K = 2, Kv = 3;
  model::AttentionParams p;
  p.q = make_linear(H * K, D, 80);
  p.k = make_linear(H * K, D, 82);
  p.v = make_linear(H * Kv, D, 84);
  p.out = make_linear(D, H * Kv, 86);
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
    Tensor x = random64({2, 4, D}, 88);  // perturbed by check_gradient
    const Tensor r = random64({2, 4, D}, 89);
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
    Tensor dx;
    model::attention_backward(p, act, r, dx, dx);  // x is both the query and the memory
    check_gradient("x", loss, x, dx);
    check_params(loss);
  }
  SECTION("cross-attention with key padding") {
    Tensor xq = random64({2, 3, D}, 90), xkv = random64({2, 5, D}, 91);  // perturbed by check_gradient
    const Tensor r = random64({2, 3, D}, 92);
    const Tensor lengths = ids_tensor({5, 2}, {2});
    ops::AttentionOptions options;
    options.heads = H;
    const auto loss = [&] { return dot(model::attention_forward(p, xq, xkv, lengths, options, nullptr), r); };
    model::AttentionActivations act;
    model::attention_forward(p, xq, xkv, lengths, options, &act);
    zero_all();
    Tensor dxq, dxkv;
    model::attention_backward(p, act, r, dxq, dxkv);
    check_gradient("xq", loss, xq, dxq);
    check_gradient("xkv", loss, xkv, dxkv);
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
      Tensor x = random64({2, 3, D}, 106);  // perturbed by check_gradient
      const Tensor r = random64({2, 3, D}, 107);
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
      const Tensor dx = model::residual_backward(placement, norm, act, r, [&](const Tensor& dy, Tensor& dinput) {
        model::feed_forward_backward(ffn, ffn_act, dy, dinput);
      });
      check_gradient("x", loss, x, dx);
      check_gradient("norm.weight", loss, norm.weight, norm.dweight);
      check_gradient("norm.bias", loss, norm.bias, norm.dbias);
      check_linear("fc1", loss, ffn.fc1);
      check_linear("fc2", loss, ffn.fc2);
    }
  }
}

}  // namespace dragoman::model
