// Embeddings and positions: cpu::embedding_forward and sinusoidal_positions against their formulas,
// embedding_backward's thread-count independence, ops::embedding's backward pass against float64
// central finite differences, and its rejection of out-of-range ids and positions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "kernels/cpu/embedding.h"
#include "ops/embedding.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;
using test::at;
using test::check_gradient;
using test::dot;
using test::ids_tensor;
using test::max_abs_difference;
using test::random64;
using test::random_values;
using test::ScopedThreads;
using test::tolerance;
using test::zeros64;

// ---- embeddings and positions -------------------------------------------------------------------

TEST_CASE("cpu::embedding_forward scales the table rows and adds positions", "[kernels]") {
  const int64_t batch = 2, length = 3, d = 4, vocab = 5, positions = 8, offset = 2;
  const std::vector<std::int32_t> ids = {4, 0, 4, 1, 3, 1};
  const std::vector<double> table = random_values<double>(vocab * d, 70),
                            pos = random_values<double>(positions * d, 71);
  std::vector<double> out(at(batch * length * d)), plain(out.size());
  cpu::embedding_forward<double>(ids.data(), table.data(), pos.data(), out.data(), batch * length, length, offset, d,
                                 2.0);
  cpu::embedding_forward<double>(ids.data(), table.data(), nullptr, plain.data(), batch * length, length, offset, d,
                                 2.0);
  for (int64_t r = 0; r < batch * length; ++r) {
    for (int64_t i = 0; i < d; ++i) {
      const double e = 2.0 * table[at(ids[at(r)] * d + i)];
      CHECK(plain[at(r * d + i)] == e);
      CHECK(out[at(r * d + i)] == e + pos[at((offset + r % length) * d + i)]);
    }
  }
}

TEMPLATE_TEST_CASE("cpu::sinusoidal_positions are the paper's interleaved sinusoids", "[kernels]", float, double) {
  using T = TestType;
  const int64_t positions = 6, d = 8;
  std::vector<T> out(at(positions * d));
  cpu::sinusoidal_positions<T>(out.data(), positions, d);
  for (int64_t t = 0; t < positions; ++t) {
    for (int64_t i = 0; 2 * i < d; ++i) {
      const double angle = t / std::pow(10000.0, 2.0 * i / d);
      CHECK(out[at(t * d + 2 * i)] == Approx(std::sin(angle)).margin(1e-7));
      CHECK(out[at(t * d + 2 * i + 1)] == Approx(std::cos(angle)).margin(1e-7));
    }
  }
  // Literal values: position 0 is (0, 1, 0, 1, ...); position 1, pair 0 is (sin 1, cos 1);
  // position 5, pair 1 has angle 5 / 10000^(2/8) = 0.5.
  for (int64_t i = 0; i < d; ++i) CHECK(out[at(i)] == T(i % 2));
  CHECK(out[at(d + 0)] == Approx(0.8414709848078965).margin(1e-7));
  CHECK(out[at(d + 1)] == Approx(0.5403023058681398).margin(1e-7));
  CHECK(out[at(5 * d + 2)] == Approx(0.479425538604203).margin(1e-7));
  CHECK(out[at(5 * d + 3)] == Approx(0.8775825618903728).margin(1e-7));
}

TEST_CASE("cpu::embedding_backward gives the same bits with 1 and 2 threads", "[kernels]") {
  // Sizes with several column blocks, so that two threads really split the work.
  const int64_t rows = 257, cols = 200;
  const std::vector<float> dy = random_values<float>(rows * cols, 90);

  // embedding_backward with many repeated ids, accumulating into the table and the positions.
  const int64_t vocab = 11, length = 8, batch = rows / length + 1, positions = 12, offset = 3, d = cols;
  const int64_t erows = batch * length;
  const std::vector<float> dout = random_values<float>(erows * d, 92);
  std::vector<std::int32_t> ids(at(erows));
  for (int64_t r = 0; r < erows; ++r) ids[at(r)] = static_cast<std::int32_t>((r * 7) % vocab);
  std::vector<float> dtable1 = random_values<float>(vocab * d, 93), dtable2 = dtable1;
  std::vector<float> dpos1 = random_values<float>(positions * d, 94), dpos2 = dpos1;
  const std::vector<float> dtable0 = dtable1, dpos0 = dpos1;
  {
    ScopedThreads threads(1);
    cpu::embedding_backward<float>(ids.data(), dout.data(), dtable1.data(), dpos1.data(), erows, length, offset, d,
                                   1.5);
  }
  {
    ScopedThreads threads(2);
    cpu::embedding_backward<float>(ids.data(), dout.data(), dtable2.data(), dpos2.data(), erows, length, offset, d,
                                   1.5);
  }
  CHECK(dtable1 == dtable2);
  CHECK(dpos1 == dpos2);
  std::vector<double> ref_table(dtable0.begin(), dtable0.end()), ref_pos(dpos0.begin(), dpos0.end());
  for (int64_t r = 0; r < erows; ++r) {
    for (int64_t c = 0; c < d; ++c) {
      ref_table[at(ids[at(r)] * d + c)] += 1.5 * dout[at(r * d + c)];
      ref_pos[at((offset + r % length) * d + c)] += dout[at(r * d + c)];
    }
  }
  CHECK(max_abs_difference(dtable1, ref_table) < 1e-4);
  CHECK(max_abs_difference(dpos1, ref_pos) < 1e-4);
  // Positions outside [offset, offset + length) get nothing.
  CHECK(std::equal(dpos0.begin(), dpos0.begin() + offset * d, dpos1.begin()));
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
