// Tensors on a GPU: storage from the CUDA caching allocator (freed blocks are reused), copies
// host -> device -> host are exact, and model ops on CUDA tensors say clearly that this version
// has no CUDA kernels for them (instead of touching device memory from the CPU).
#include <catch2/catch.hpp>

#include <vector>

#include "core/allocator.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ops/elementwise.h"

namespace dragoman {

TEST_CASE("Tensors round-trip through a GPU exactly", "[cuda][tensor]") {
  const Device gpu = Device::cuda(0);
  std::vector<float> values(1025);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f - 3.0f;
  const Tensor host = Tensor::from_vector(values, {5, 205});
  const Tensor device = host.to(gpu);
  CHECK(device.device() == gpu);
  CHECK(device.to_vector<float>() == values);
  const Tensor copy = device.clone();
  CHECK(!copy.shares_storage(device));
  CHECK(copy.to(Device::cpu()).to_vector<float>() == values);
  Tensor zeros = Tensor::zeros({7}, DType::kF64, gpu);
  CHECK(zeros.to_vector<double>() == std::vector<double>(7, 0.0));
  CHECK_THROWS_WITH(device.transpose(0, 1).to(Device::cpu()), Catch::Contains("contiguous"));
}

TEST_CASE("The CUDA caching allocator reuses freed blocks", "[cuda][allocator]") {
  CachingAllocator& alloc = allocator_for(Device::cuda(0));
  const AllocatorStats before = alloc.stats();
  void* first = nullptr;
  {
    const Tensor t = Tensor::empty({1 << 20}, DType::kF32, Device::cuda(0));
    first = t.raw_data();
    CHECK(alloc.stats().in_use >= before.in_use + (std::size_t{4} << 20));
  }
  const Tensor again = Tensor::empty({1 << 20}, DType::kF32, Device::cuda(0));
  CHECK(again.raw_data() == first);
  CHECK(alloc.stats().reserved == before.reserved + CachingAllocator::round_size(std::size_t{4} << 20));
}

TEST_CASE("Model ops on GPU tensors are a clear error in this version", "[cuda][ops]") {
  const Tensor x = Tensor::zeros({4}, DType::kF32, Device::cuda(0));
  CHECK_THROWS_WITH(ops::relu(x), Catch::Contains("relu: no CUDA kernel"));
}

}  // namespace dragoman
