// The CUDA caching allocator on a real device: tensors of varying shapes stop calling cudaMalloc
// once the largest batch has been seen and never call cudaFree; a block freed while the stream
// still works on it is reused in stream order without corrupting the pending work; out of memory is
// a clear error after which the allocator works; release_all() gives everything back and the device
// can be used again.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "base/error.h"
#include "core/allocator.h"
#include "core/tensor.h"
#include "device/cuda/context.h"
#include "kernels/random.h"

namespace dragoman {
namespace {

const Device kGpu = Device::cuda(0);

// The tensors of one step over a batch of L tokens (shapes as in a small Transformer), all alive
// until the end of the step.
void step(std::int64_t L) {
  std::vector<Tensor> live;
  for (int layer = 0; layer < 3; ++layer) {
    live.push_back(Tensor::empty({L, 512}, DType::kF32, kGpu));
    live.push_back(Tensor::empty({L, 2048}, DType::kF32, kGpu));
    live.push_back(Tensor::empty({8, L, L}, DType::kF32, kGpu));
    live.push_back(Tensor::empty({L}, DType::kF32, kGpu));
  }
  live.push_back(Tensor::empty({L, 8000}, DType::kF32, kGpu));
  for (std::size_t i = 0; i < live.size(); i += 2) live[i] = Tensor();  // freed out of order
}

}  // namespace

TEST_CASE("CUDA tensors of varying shapes make no cudaMalloc after the largest and no cudaFree", "[cuda]") {
  CachingAllocator& alloc = allocator_for(kGpu);
  CHECK(alloc.policy() == CachingAllocator::Policy::kSplitSegments);
  step(120);
  const AllocatorStats warm = alloc.stats();
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::int64_t> length(1, 120);
  for (int i = 0; i < 200; ++i) step(length(rng));
  const AllocatorStats st = alloc.stats();
  CHECK(st.system_allocations == warm.system_allocations);
  CHECK(st.system_frees == warm.system_frees);
  CHECK(st.reserved == warm.reserved);
  CHECK(st.in_use == warm.in_use);
}

TEST_CASE("A block freed while its stream still uses it is reused in stream order", "[cuda]") {
  allocator_for(kGpu).empty_cache();           // no cached block of other tests to pick instead
  const std::size_t n = std::size_t{1} << 22;  // 16 MiB of f32: the kernels take a while
  std::vector<float> expected(n);
  cpu::uniform_fill(expected.data(), n, 2026, 9, 0);
  Tensor copy;
  void* first = nullptr;
  {
    Tensor x = Tensor::empty({static_cast<std::int64_t>(n)}, DType::kF32, kGpu);
    first = x.raw_data();
    const cuda::DeviceGuard guard(0);
    cuda::uniform_fill(x.data<float>(), n, 2026, 9, 0, cuda::stream_of(0));
    copy = x.clone();  // issued, likely still running when x goes away
  }
  Tensor y = Tensor::empty({static_cast<std::int64_t>(n)}, DType::kF32, kGpu);
  CHECK(y.raw_data() == first);  // the same block, at once
  y.fill_zero();                 // runs after the clone on the stream
  CHECK(copy.to_vector<float>() == expected);
  CHECK(y.to_vector<float>() == std::vector<float>(n, 0.0f));
}

TEST_CASE("Out of memory on a GPU is a clear error and the allocator keeps working", "[cuda]") {
  CHECK_THROWS_WITH(Tensor::empty({std::int64_t{1} << 42}, DType::kF32, kGpu),
                    Catch::Contains("out of memory on cuda:0"));
  const Tensor t = Tensor::zeros({1025}, DType::kF32, kGpu);
  CHECK(t.to_vector<float>() == std::vector<float>(1025, 0.0f));
}

TEST_CASE("release_all gives the GPU's memory back and the device works again afterwards", "[cuda]") {
  {
    const Tensor t = Tensor::zeros({1 << 20}, DType::kF32, kGpu);
    CHECK(allocator_for(kGpu).stats().reserved > 0);
  }
  release_all();
  CHECK(allocator_for(kGpu).stats().reserved == 0);
  CHECK(allocator_for(kGpu).stats().in_use == 0);
  const Tensor again = Tensor::from_vector(std::vector<float>{1.0f, 2.0f}, {2}).to(kGpu);  // a new context
  CHECK(again.to_vector<float>() == std::vector<float>{1.0f, 2.0f});
}

}  // namespace dragoman
