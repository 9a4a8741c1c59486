// Embeddings and positions: cpu::embedding_forward and sinusoidal_positions against their formulas,
// embedding_backward's thread-count independence, ops::embedding's backward pass against float64
// central finite differences, and its rejection of out-of-range ids and positions (the CPU's
// tests); the parameter gradients' dtype and sums for every op case (each device and dtype).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "core/tensor.h"
#include "kernels/embedding.h"
#include "ops/embedding.h"
#include "ops/op_testing.h"

namespace dragoman {

using std::int64_t;
using namespace test;  // the shared helpers of tests/ops/op_testing.h

// ---- embeddings and positions -------------------------------------------------------------------

DRAGOMAN_CPU_TEST_CASE("cpu::embedding_forward scales the table rows and adds positions", "[kernels]") {
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

DRAGOMAN_CPU_TEMPLATE_TEST_CASE("cpu::sinusoidal_positions are the paper's interleaved sinusoids", "[kernels]", float,
                                double) {
  using T = TestType;
  const int64_t positions = 6, d = 8;
  std::vector<T> out(at(positions * d));
  cpu::sinusoidal_positions<T>(out.data(), positions, d, 0);
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

DRAGOMAN_CPU_TEST_CASE("cpu::sinusoidal_positions: MarianMT's concatenated and Marian's tensor2tensor layouts",
                       "[kernels]") {
  const int64_t positions = 6, d = 8, half = d / 2;
  std::vector<double> concatenated(at(positions * d)), t2t(at(positions * d));
  cpu::sinusoidal_positions<double>(concatenated.data(), positions, d, 1);
  cpu::sinusoidal_positions<double>(t2t.data(), positions, d, 2);
  for (int64_t t = 0; t < positions; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double paper = t * std::pow(10000.0, -2.0 * i / d);                 // MarianMT: the paper's frequencies
      const double marian = t * std::exp(-i * std::log(10000.0) / (half - 1));  // Marian's formula
      CHECK(concatenated[at(t * d + i)] == Approx(std::sin(paper)).margin(1e-15));
      CHECK(concatenated[at(t * d + half + i)] == Approx(std::cos(paper)).margin(1e-15));
      CHECK(t2t[at(t * d + i)] == Approx(std::sin(marian)).margin(1e-14));
      CHECK(t2t[at(t * d + half + i)] == Approx(std::cos(marian)).margin(1e-14));
    }
  }
  // Literal values: position 0 is (0, 0, 0, 0, 1, 1, 1, 1) in both; position 5 has angle
  // 5 / 10000^(2/8) = 0.5 in column 1 (MarianMT) and 5 / 10000^(1/3) in column 1 (tensor2tensor),
  // and tensor2tensor's last frequency is 1/10000 (MarianMT's: 1/10000^(6/8)).
  for (int64_t i = 0; i < d; ++i) CHECK(concatenated[at(i)] == (i < half ? 0.0 : 1.0));
  for (int64_t i = 0; i < d; ++i) CHECK(t2t[at(i)] == (i < half ? 0.0 : 1.0));
  CHECK(concatenated[at(5 * d + 1)] == Approx(0.479425538604203).margin(1e-15));
  CHECK(concatenated[at(5 * d + half + 1)] == Approx(0.8775825618903728).margin(1e-15));
  CHECK(t2t[at(5 * d + 1)] == Approx(std::sin(5.0 / std::cbrt(10000.0))).margin(1e-15));
  CHECK(t2t[at(5 * d + 3)] == Approx(std::sin(5e-4)).margin(1e-15));
}

DRAGOMAN_CPU_TEST_CASE("cpu::embedding_backward gives the same bits with 1 and 2 threads", "[kernels]") {
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

DRAGOMAN_CPU_TEST_CASE("ops::embedding gradients match finite differences", "[ops]") {
  const int64_t V = 6, D = 5, P = 9, offset = 2;
  const Tensor ids = ids_tensor({3, 1, 3, 0, 5, 3, 1, 1}, {2, 4});        // repeated ids; 2 and 4 unused
  Tensor table = random64({V, D}, 50), positions = random64({P, D}, 51);  // perturbed by check_gradient
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
    Tensor dtable = zeros64({V, D}), no_dpositions;
    ops::embedding_backward(ids, r, dtable, no_dpositions, 0, scale);
    check_gradient("table", loss, table, dtable);
  }
}

DRAGOMAN_CPU_TEST_CASE("ops::embedding rejects out-of-range ids and positions", "[ops]") {
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
  Tensor dtable = zeros64({6, 3}), no_dpositions;
  DRAGOMAN_CHECK_OP_ERROR(
      ops::embedding_backward(ids_tensor({7, 2}, {1, 2}), zeros64({1, 2, 3}), dtable, no_dpositions, 0, 1.0),
      "embedding_backward", "token id 7");
  DRAGOMAN_CHECK_OP_ERROR(
      ops::embedding_backward(ids_tensor({1, 2}, {1, 2}), zeros64({1, 3, 3}), dtable, no_dpositions, 0, 1.0),
      "embedding_backward", "dout");
  // A valid call still works after the failures, and leaves dtable untouched by them.
  CHECK(dtable.to_vector<double>() == std::vector<double>(18, 0.0));
  CHECK(ops::embedding(ids_tensor({5, 0}, {1, 2}), table, positions, 2, 1.0).shape() == Shape{1, 2, 3});
}

// ---- every storage type ---------------------------------------------------------------------------

namespace {

// embedding_forward and embedding_backward over T, V x D table, against references computed in
// acc_t<T> from the rounded inputs in the kernels' order (the backward pass adds rows in order):
// the same bits. The forward rounds scale * e + p once; the gradients stay in acc_t<T>.
template <typename T>
void check_embedding_kernels(int64_t vocab, int64_t d) {
  using A = acc_t<T>;
  const int64_t batch = 3, length = 5, rows = batch * length, positions = 9, offset = 2;
  const double scale = std::sqrt(static_cast<double>(d));
  const A s = static_cast<A>(scale);
  std::vector<std::int32_t> ids(at(rows));
  for (int64_t r = 0; r < rows; ++r) ids[at(r)] = static_cast<std::int32_t>((r * 7919 + vocab - 1) % vocab);
  ids[0] = ids[3];  // a repeated id
  const std::vector<T> table = test::to_storage<T>(test::random_doubles(vocab * d, 240, 0.1));
  const std::vector<T> pos = test::to_storage<T>(test::random_doubles(positions * d, 241));
  const std::vector<T> dout = test::to_storage<T>(test::random_doubles(rows * d, 242));

  test::GuardedBuffer<T> out(rows * d);
  cpu::embedding_forward<T>(ids.data(), table.data(), pos.data(), out.data(), rows, length, offset, d, scale);
  std::vector<double> exact(at(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < d; ++i) {
      exact[at(r * d + i)] =
          s * load(table[at(ids[at(r)] * d + i)]) + static_cast<A>(load(pos[at((offset + r % length) * d + i)]));
    }
  }
  check_guarded_rounding("embedding_forward", out, exact, exact, 0.0);

  const std::vector<A> dtable0 = test::to_storage<A>(test::random_doubles(vocab * d, 243));
  const std::vector<A> dpos0 = test::to_storage<A>(test::random_doubles(positions * d, 244));
  test::GuardedBuffer<A> dtable(vocab * d), dpos(positions * d);
  std::copy(dtable0.begin(), dtable0.end(), dtable.data());
  std::copy(dpos0.begin(), dpos0.end(), dpos.data());
  cpu::embedding_backward<T>(ids.data(), dout.data(), dtable.data(), dpos.data(), rows, length, offset, d, scale);
  std::vector<A> ref_table = dtable0, ref_pos = dpos0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < d; ++i) {
      const A g = load(dout[at(r * d + i)]);
      ref_table[at(ids[at(r)] * d + i)] += s * g;
      ref_pos[at((offset + r % length) * d + i)] += g;
    }
  }
  const std::vector<double> exact_table(ref_table.begin(), ref_table.end()), exact_pos(ref_pos.begin(), ref_pos.end());
  check_guarded_rounding("embedding_backward dtable", dtable, exact_table, exact_table, 0.0);
  check_guarded_rounding("embedding_backward dpositions", dpos, exact_pos, exact_pos, 0.0);
}

// Whether v is an element of T nearest to `exact` (no other element of T is closer): v's
// neighbours on both sides, one step of T's grid away, are no closer.
template <typename T>
bool is_nearest(T v, double exact) {
  const double got = load(v), err = std::fabs(got - exact);
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    const T up = std::nextafter(v, std::numeric_limits<T>::infinity());
    const T down = std::nextafter(v, -std::numeric_limits<T>::infinity());
    return err <= std::fabs(load(up) - exact) && err <= std::fabs(load(down) - exact);
  } else {
    // Magnitudes are ordered like the bits below the sign: step the magnitude up and down.
    const std::uint16_t sign = v.bits & 0x8000u, magnitude = v.bits & 0x7FFFu;
    const T away = T::from_bits(static_cast<std::uint16_t>(sign | (magnitude + 1)));
    const T towards =
        T::from_bits(static_cast<std::uint16_t>(magnitude == 0 ? 0x8001u ^ sign : sign | (magnitude - 1)));
    return err <= std::fabs(load(away) - exact) && err <= std::fabs(load(towards) - exact);
  }
}

}  // namespace

DRAGOMAN_CPU_TEST_CASE("cpu::embedding_forward and embedding_backward round once, in every storage type", "[kernels]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      test::with_storage_type(c.dtype, [&](auto zero) {
        using T = decltype(zero);
        for (const int64_t d : test::awkward_sizes()) {
          INFO("d " << d);
          check_embedding_kernels<T>(11, d);
        }
        INFO("a vocabulary-sized table");
        check_embedding_kernels<T>(32000, 33);
      });
    }
  }
}

DRAGOMAN_CPU_TEST_CASE(
    "cpu::sinusoidal_positions are the nearest elements to the double sinusoids, in every storage type", "[kernels]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      test::with_storage_type(c.dtype, [&](auto zero) {
        using T = decltype(zero);
        const int64_t positions = 64, d = 512;
        test::GuardedBuffer<T> out(positions * d);
        cpu::sinusoidal_positions<T>(out.data(), positions, d, 0);
        CHECK(out.intact());
        int64_t bad = 0;
        for (int64_t t = 0; t < positions; ++t) {
          for (int64_t i = 0; 2 * i < d; ++i) {
            const double angle = static_cast<double>(t) / std::pow(10000.0, 2.0 * static_cast<double>(i) / d);
            bad += is_nearest(out.data()[at(t * d + 2 * i)], std::sin(angle)) ? 0 : 1;
            bad += is_nearest(out.data()[at(t * d + 2 * i + 1)], std::cos(angle)) ? 0 : 1;
          }
        }
        CHECK(bad == 0);
        // The op gives the same table in that dtype.
        const Tensor table = ops::sinusoidal_positions(positions, d, c.dtype);
        CHECK(table.dtype() == c.dtype);
        CHECK(test::to_doubles(table) == test::widen(out.data(), positions * d));
      });
    }
  }
}

TEST_CASE("ops::embedding_backward accumulates into gradients of the accumulator dtype", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.name) {
      const int64_t V = 6, D = 5, P = 9;
      const DType acc = accumulator_dtype(c.dtype);
      const Tensor ids = ids_tensor({3, 1, 3, 0, 5, 3, 1, 1}, {2, 4}).to(c.device);
      const Tensor table = test::from_doubles(test::random_doubles(V * D, 250), {V, D}, c.dtype, c.device);
      const Tensor positions = test::from_doubles(test::random_doubles(P * D, 251), {P, D}, c.dtype, c.device);
      const Tensor out = ops::embedding(ids, table, positions, 1, 2.0);
      CHECK(out.dtype() == c.dtype);
      const Tensor dout = test::from_doubles(test::random_doubles(2 * 4 * D, 252), {2, 4, D}, c.dtype, c.device);
      Tensor dtable = Tensor::zeros({V, D}, acc, c.device), dpositions = Tensor::zeros({P, D}, acc, c.device);
      ops::embedding_backward(ids, dout, dtable, dpositions, 1, 2.0);
      // Token 3 (rows 0, 2 and 5) gets 2 * the sum of their gradients.
      const std::vector<double> g = test::to_doubles(dout), dt = test::to_doubles(dtable);
      for (int64_t i = 0; i < D; ++i) {
        CHECK(dt[at(3 * D + i)] == Approx(2.0 * (g[at(0 * D + i)] + g[at(2 * D + i)] + g[at(5 * D + i)])).margin(1e-6));
      }
      // With padding_id 3: token 3's rows add nothing to the table, the others and every position
      // exactly what they added before.
      Tensor dtable_pad = Tensor::zeros({V, D}, acc, c.device), dpositions_pad = Tensor::zeros({P, D}, acc, c.device);
      ops::embedding_backward(ids, dout, dtable_pad, dpositions_pad, 1, 2.0, 3);
      const std::vector<double> dp = test::to_doubles(dtable_pad);
      for (int64_t v = 0; v < V; ++v) {
        for (int64_t i = 0; i < D; ++i) {
          INFO("row " << v << " column " << i);
          CHECK(dp[at(v * D + i)] == (v == 3 ? 0.0 : dt[at(v * D + i)]));
        }
      }
      CHECK(test::to_doubles(dpositions_pad) == test::to_doubles(dpositions));
      if (acc != c.dtype) {
        Tensor wrong = Tensor::zeros({V, D}, c.dtype, c.device), no_dpositions;
        DRAGOMAN_CHECK_OP_ERROR(ops::embedding_backward(ids, dout, wrong, no_dpositions, 0, 1.0), "embedding_backward",
                                "accumulator dtype");
      }
    }
  }
}

}  // namespace dragoman
