// Tensors on a GPU: copies host <-> device <-> device are exact for dense views and for strided ones
// (a transpose read back, a row written into a [B, P, X] key/value cache from the host and from the
// device, a strided host view uploaded), zero fills of dense tensors and of views leave the rest
// alone, dtype casts equal the CPU's bit for bit, copies between two GPUs, and model ops on CUDA
// tensors run there.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "core/tensor.h"
#include "device/cuda/runtime_info.h"
#include "model/batch.h"
#include "ops/elementwise.h"

namespace dragoman {
namespace {

const Device kGpu = Device::cuda(0);

// 0, 1, 2, ... (times `scale`) as a CPU tensor.
Tensor iota(const Shape& shape, float scale = 1.0f) {
  std::vector<float> values(static_cast<std::size_t>(shape_numel(shape)));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * scale;
  return Tensor::from_vector(values, shape);
}

}  // namespace

TEST_CASE("Tensors round-trip through a GPU exactly", "[cuda][tensor]") {
  for (const std::int64_t n : {1, 7, 31, 32, 33, 255, 513, 1025, 37000}) {
    INFO("n = " << n);
    const Tensor host = iota({n}, 0.5f);
    const Tensor device = host.to(kGpu);
    CHECK(device.device() == kGpu);
    CHECK(device.to_vector<float>() == host.to_vector<float>());
    const Tensor copy = device.clone();
    CHECK(!copy.shares_storage(device));
    CHECK(copy.to(Device::cpu()).to_vector<float>() == host.to_vector<float>());
  }
  std::vector<double> d = {0.1, -2.5, 1e300};
  CHECK(Tensor::from_vector(d, {3}).to(kGpu).to_vector<double>() == d);
  std::vector<std::int32_t> i = {7, -8, 2147483647};
  CHECK(Tensor::from_vector(i, {3}).to(kGpu).to_vector<std::int32_t>() == i);
  CHECK(Tensor::zeros({7}, DType::kF64, kGpu).to_vector<double>() == std::vector<double>(7, 0.0));
  CHECK(Tensor::zeros({0, 3}, DType::kF32, kGpu).to_vector<float>().empty());
}

TEST_CASE("Strided views copy to, from and within a GPU", "[cuda][tensor]") {
  for (const std::int64_t n : {1, 7, 33, 513}) {
    INFO("n = " << n);
    const Tensor host = iota({n, 5});
    const Tensor device = host.to(kGpu);
    // A transposed GPU view read back (device strided kernel, then a dense download).
    CHECK(device.transpose(0, 1).to(Device::cpu()).to_vector<float>() ==
          host.transpose(0, 1).contiguous().to_vector<float>());
    CHECK(device.transpose(0, 1).contiguous().to_vector<float>() ==
          host.transpose(0, 1).contiguous().to_vector<float>());
    // A strided host view uploaded (made dense on the host first), and into a strided GPU view.
    CHECK(host.transpose(0, 1).to(kGpu).to_vector<float>() == host.transpose(0, 1).contiguous().to_vector<float>());
    Tensor gpu_t = Tensor::zeros({n, 5}, DType::kF32, kGpu).transpose(0, 1);
    gpu_t.copy_from(host.transpose(0, 1));
    CHECK(gpu_t.to_vector<float>() == host.transpose(0, 1).contiguous().to_vector<float>());
    // A GPU view downloaded into a strided host view.
    Tensor host_t = Tensor::zeros({n, 5}, DType::kF32).transpose(0, 1);
    host_t.copy_from(device.transpose(0, 1));
    CHECK(host_t.to_vector<float>() == host.transpose(0, 1).contiguous().to_vector<float>());
  }
}

TEST_CASE("A row written into a GPU key/value cache leaves the other rows alone", "[cuda][tensor]") {
  // cache [B, P, X]; row p of every batch entry from a dense [B, X]: a pitched copy.
  for (const std::int64_t x : {1, 7, 33, 1025}) {
    for (const std::int64_t b : {1, 3}) {
      INFO("X = " << x << ", B = " << b);
      const std::int64_t p_count = 5, p = 2;
      Tensor cache_cpu = iota({b, p_count, x}, -1.0f);
      Tensor cache_gpu = cache_cpu.to(kGpu);
      const Tensor row = iota({b, 1, x}, 3.0f);
      cache_cpu.narrow(1, p, 1).copy_from(row);
      cache_gpu.narrow(1, p, 1).copy_from(row);  // host -> device view
      CHECK(cache_gpu.to_vector<float>() == cache_cpu.to_vector<float>());
      const Tensor row_gpu = iota({b, 1, x}, 7.0f).to(kGpu);
      cache_cpu.narrow(1, p + 1, 1).copy_from(iota({b, 1, x}, 7.0f));
      cache_gpu.narrow(1, p + 1, 1).copy_from(row_gpu);  // device -> device view
      CHECK(cache_gpu.to_vector<float>() == cache_cpu.to_vector<float>());
      // Growth: the first P rows of every entry into a cache twice as long.
      Tensor grown = Tensor::zeros({b, 2 * p_count, x}, DType::kF32, kGpu);
      grown.narrow(1, 0, p_count).copy_from(cache_gpu);
      CHECK(grown.narrow(1, 0, p_count).to_vector<float>() == cache_cpu.to_vector<float>());
      CHECK(grown.narrow(1, p_count, p_count).to_vector<float>() ==
            std::vector<float>(static_cast<std::size_t>(b * p_count * x), 0.0f));
    }
  }
}

TEST_CASE("fill_zero on a GPU zeroes the tensor or the view and nothing else", "[cuda][tensor]") {
  for (const std::int64_t n : {1, 7, 31, 32, 33, 255, 513, 1025, 37000}) {
    INFO("n = " << n);
    Tensor t = iota({n + 1}, 1.0f).to(kGpu);
    t.narrow(0, 0, n).fill_zero();  // dense: a memset; the last element is the sentinel
    std::vector<float> got = t.to_vector<float>();
    CHECK(got == [&] {
      std::vector<float> v(static_cast<std::size_t>(n + 1), 0.0f);
      v.back() = static_cast<float>(n);
      return v;
    }());
    Tensor m = iota({n, 3}, 1.0f).to(kGpu);
    m.narrow(1, 1, 1).fill_zero();  // a column: strided
    Tensor expected = iota({n, 3}, 1.0f);
    expected.narrow(1, 1, 1).fill_zero();
    CHECK(m.to_vector<float>() == expected.to_vector<float>());
  }
}

TEST_CASE("Tensor::to(DType) on a GPU equals the CPU conversion bit for bit", "[cuda][tensor]") {
  for (const std::int64_t n : {1, 7, 31, 32, 33, 255, 513, 1025, 37000}) {
    INFO("n = " << n);
    std::vector<float> values(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < values.size(); ++i) {
      values[i] = (static_cast<float>(i) - 17.0f) * 1.0009765625f * (i % 3 == 0 ? 1e-6f : 3.7f);
    }
    const Tensor host = Tensor::from_vector(values, {n});
    const Tensor device = host.to(kGpu);
    for (const DType half : {DType::kBF16, DType::kF16}) {
      const Tensor on_gpu = device.to(half);
      CHECK(on_gpu.device() == kGpu);
      const Tensor on_cpu = host.to(half);
      const Tensor back = on_gpu.to(Device::cpu());
      CHECK(std::memcmp(back.raw_data(), on_cpu.raw_data(), on_cpu.nbytes()) == 0);
      CHECK(on_gpu.to(DType::kF32).to_vector<float>() == on_cpu.to(DType::kF32).to_vector<float>());
    }
  }
  CHECK_THROWS_WITH(Tensor::zeros({3}, DType::kF32, kGpu).to(DType::kF64),
                    Catch::Contains("on a GPU only f32 <-> bf16/f16"));
  const Tensor same = Tensor::zeros({3}, DType::kF32, kGpu);
  CHECK(!same.to(DType::kF32).shares_storage(same));  // a copy, as on the CPU
}

TEST_CASE("Tensors copy between two GPUs", "[cuda][tensor]") {
  if (cuda::device_count() < 2) {
    WARN("one GPU: copies between GPUs are not exercised");
    return;
  }
  const Tensor host = iota({33, 7});
  const Tensor on0 = host.to(Device::cuda(0));
  const Tensor on1 = on0.to(Device::cuda(1));
  CHECK(on1.device() == Device::cuda(1));
  CHECK(on1.to_vector<float>() == host.to_vector<float>());
  Tensor view1 = Tensor::zeros({7, 33}, DType::kF32, Device::cuda(1)).transpose(0, 1);
  view1.copy_from(on0);
  CHECK(view1.to_vector<float>() == host.to_vector<float>());
  CHECK(on0.transpose(0, 1).to(Device::cuda(1)).to_vector<float>() ==
        host.transpose(0, 1).contiguous().to_vector<float>());
}

TEST_CASE("Model ops on GPU tensors run on the GPU", "[cuda][ops]") {
  const Tensor x = iota({4}, -0.5f).to(kGpu);  // 0, -0.5, -1, -1.5
  const Tensor y = ops::relu(ops::add(x, iota({4}, 1.0f).to(kGpu)));
  CHECK(y.device() == kGpu);
  CHECK(y.to_vector<float>() == std::vector<float>{0.0f, 0.5f, 1.0f, 1.5f});
}

TEST_CASE("A batch moves to a GPU validated on the host, with its token count", "[cuda][batch]") {
  model::ModelConfig config;
  config.src_vocab_size = config.tgt_vocab_size = 60;
  const model::Batch host = model::Batch::from_sentences({{5, 6}, {7}}, {{8, 9, 10}, {}}, config);
  const model::Batch gpu = host.to(kGpu, config);
  CHECK(gpu.device() == kGpu);
  CHECK(gpu.validated_on_device());
  CHECK(gpu.target_tokens() == 5);
  CHECK(gpu.tgt_out.to_vector<std::int32_t>() == host.tgt_out.to_vector<std::int32_t>());
  model::Batch bad = host;
  bad.src_lengths = Tensor::from_vector(std::vector<std::int32_t>{3, 1}, {2});
  CHECK_THROWS_WITH(bad.to(kGpu, config), Catch::Contains("invalid batch"));
}

}  // namespace dragoman
