// cuda::embedding_forward/backward (kernels/embedding.h) against the CPU spec, bit for bit,
// for f64, f32, bf16 and f16: with and without positions, a position offset, widths 1 ... 1025,
// a 32000-row vocabulary, and ids that repeat heavily (a vocabulary of 3) or hardly at all; the
// gradients accumulate into non-zero tables (the rows of an id in row order, as the CPU adds them);
// sentinels after every output; a second backward run gives the same bits. Then the ops on GPU
// tensors (ids on the GPU) equal the CPU ops.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "kernels/embedding.h"
#include "ops/embedding.h"
#include "parity_testing.h"

namespace dragoman {
namespace {

using test::DeviceBuffer;
using test::random_values;

std::vector<std::int32_t> random_ids(std::size_t n, std::int64_t vocab, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> id(0, static_cast<std::int32_t>(vocab - 1));
  std::vector<std::int32_t> ids(n);
  for (std::int32_t& i : ids) i = id(rng);
  return ids;
}

struct Case {
  std::int64_t batch, length, vocab, d;
};

}  // namespace

TEMPLATE_TEST_CASE("cuda embedding equals the CPU spec bit for bit", "[cuda][embedding]", double, float, bf16, f16) {
  using T = TestType;
  using A = acc_t<T>;
  const cuda::Stream stream = test::test_stream();
  for (const Case c : {Case{1, 1, 1, 1}, Case{1, 7, 3, 31}, Case{4, 8, 3, 32}, Case{3, 11, 50, 33}, Case{2, 33, 7, 255},
                       Case{5, 103, 32000, 64}, Case{9, 57, 3, 513}, Case{3, 5, 100, 1025}, Case{40, 25, 32000, 7}}) {
    INFO("B = " << c.batch << ", L = " << c.length << ", V = " << c.vocab << ", D = " << c.d);
    const std::int64_t rows = c.batch * c.length, positions = c.length + 3, offset = 2;
    const auto ur = static_cast<std::size_t>(rows), ud = static_cast<std::size_t>(c.d);
    const std::vector<std::int32_t> ids = random_ids(ur, c.vocab, 31);
    const std::vector<T> table = random_values<T>(static_cast<std::size_t>(c.vocab) * ud, 32),
                         pos = random_values<T>(static_cast<std::size_t>(positions) * ud, 33),
                         dout = random_values<T>(ur * ud, 34);
    DeviceBuffer<std::int32_t> dids(ids);
    DeviceBuffer<T> dtable_values(table), dpos(pos), ddout(dout);
    for (const bool with_positions : {true, false}) {
      INFO("positions: " << with_positions);
      std::vector<T> expected(ur * ud);
      cpu::embedding_forward<T>(ids.data(), table.data(), with_positions ? pos.data() : nullptr, expected.data(), rows,
                                c.length, offset, c.d, 2.5);
      DeviceBuffer<T> out(ur * ud);
      cuda::embedding_forward<T>(dids.get(), dtable_values.get(), with_positions ? dpos.get() : nullptr, out.get(),
                                 rows, c.length, offset, c.d, 2.5, stream);
      test::check_bits(out.download(), expected, "embedding_forward");
      out.check_sentinel();
    }
    const std::vector<A> dtable0 = random_values<A>(static_cast<std::size_t>(c.vocab) * ud, 35),
                         dpos0 = random_values<A>(static_cast<std::size_t>(positions) * ud, 36);
    std::vector<A> dtable = dtable0, dpositions = dpos0;
    cpu::embedding_backward<T>(ids.data(), dout.data(), dtable.data(), dpositions.data(), rows, c.length, offset, c.d,
                               1.7);
    DeviceBuffer<A> gdtable(dtable0), gdpos(dpos0);
    DeviceBuffer<unsigned char> workspace(cuda::embedding_backward_workspace(rows, c.vocab));
    cuda::embedding_backward<T>(dids.get(), ddout.get(), gdtable.get(), gdpos.get(), rows, c.length, offset, c.d, 1.7,
                                c.vocab, workspace.get(), stream);
    test::check_bits(gdtable.download(), dtable, "dtable");
    test::check_bits(gdpos.download(), dpositions, "dpositions");
    gdtable.check_sentinel();
    gdpos.check_sentinel();
    workspace.check_sentinel();
    // Without positions, and a second run: the same table bits.
    gdtable.upload(dtable0);
    cuda::embedding_backward<T>(dids.get(), ddout.get(), gdtable.get(), nullptr, rows, c.length, offset, c.d, 1.7,
                                c.vocab, workspace.get(), stream);
    test::check_bits(gdtable.download(), dtable, "dtable, second run without positions");
  }
}

TEST_CASE("embedding ops on GPU tensors equal the CPU ops", "[cuda][embedding][ops]") {
  const Device gpu = Device::cuda(0);
  const Tensor ids = Tensor::from_vector(std::vector<std::int32_t>{3, 1, 3, 0, 5, 3, 1, 1}, {2, 4});
  for (const DType dtype : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16}) {
    INFO(dtype_name(dtype));
    const DType acc = accumulator_dtype(dtype);
    const Tensor table = Tensor::from_vector(random_values<float>(6 * 33, 41), {6, 33}).to(dtype);
    const Tensor positions = Tensor::from_vector(random_values<float>(7 * 33, 42), {7, 33}).to(dtype);
    const Tensor dout = Tensor::from_vector(random_values<float>(8 * 33, 43), {2, 4, 33}).to(dtype);
    const Tensor out = ops::embedding(ids, table, positions, 1, 5.0);
    const Tensor gout = ops::embedding(ids.to(gpu), table.to(gpu), positions.to(gpu), 1, 5.0);
    CHECK(gout.to(Device::cpu()).to(DType::kF64).to_vector<double>() == out.to(DType::kF64).to_vector<double>());
    Tensor dtable = Tensor::zeros({6, 33}, acc), dpos = Tensor::zeros({7, 33}, acc);
    Tensor gdtable = dtable.to(gpu), gdpos = dpos.to(gpu);
    ops::embedding_backward(ids, dout, dtable, dpos, 1, 5.0);
    ops::embedding_backward(ids.to(gpu), dout.to(gpu), gdtable, gdpos, 1, 5.0);
    CHECK(gdtable.to(Device::cpu()).to(DType::kF64).to_vector<double>() == dtable.to(DType::kF64).to_vector<double>());
    CHECK(gdpos.to(Device::cpu()).to(DType::kF64).to_vector<double>() == dpos.to(DType::kF64).to_vector<double>());
  }
  // Ids must be on the table's device.
  const Tensor table = Tensor::zeros({6, 4}, DType::kF32, gpu);
  CHECK_THROWS_WITH(ops::embedding(ids, table, Tensor(), 0, 1.0), Catch::Contains("table's device"));
}

}  // namespace dragoman
