// The tensor core on the CPU: creation (empty, zeros, from_vector) and read-back (to_vector); views
// (view with an inferred -1 dimension, narrow, transpose) that share storage and carry the right
// strides; copies (contiguous, clone, copy_from between strided views in both directions, as when
// writing one row of a [B, P, X] key/value cache); dtype conversion f32 <-> f64 <-> i32; typed
// access with the wrong element type; Device::parse; storage from the CPU allocator; and, in a
// CPU-only build, the clear errors of CUDA tensors (the allocator's own tests: test_allocator.cpp).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "core/allocator.h"
#include "core/strided_copy.h"
#include "core/tensor.h"
#include "device/cuda/context.h"
#include "device/cuda/pinned.h"
#include "device/cuda/runtime_info.h"
#include "device/device.h"

namespace dragoman {
namespace {

// 0, 1, 2, ... as a float tensor of `shape`.
Tensor iota(const Shape& shape) {
  std::vector<float> values(static_cast<std::size_t>(shape_numel(shape)));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  return Tensor::from_vector(values, shape);
}

}  // namespace

TEST_CASE("Tensor empty, zeros, from_vector and to_vector", "[core]") {
  const Tensor e = Tensor::empty({2, 3, 4}, DType::kF64);
  CHECK(e.defined());
  CHECK(e.dtype() == DType::kF64);
  CHECK(e.device() == Device::cpu());
  CHECK(e.shape() == Shape{2, 3, 4});
  CHECK(e.strides() == Shape{12, 4, 1});
  CHECK(e.rank() == 3);
  CHECK(e.dim(0) == 2);
  CHECK(e.dim(-1) == 4);
  CHECK(e.numel() == 24);
  CHECK(e.nbytes() == 24 * sizeof(double));
  CHECK(e.is_contiguous());
  CHECK(e.describe() == "f64[2, 3, 4] cpu");
  CHECK_THROWS_AS(e.dim(3), Error);
  CHECK_THROWS_AS(e.dim(-4), Error);
  CHECK_THROWS_AS(Tensor::empty({2, -1}, DType::kF32), Error);

  const Tensor z = Tensor::zeros({3, 5}, DType::kF32);
  CHECK(z.to_vector<float>() == std::vector<float>(15, 0.0f));
  CHECK(Tensor::zeros({4}, DType::kI32).to_vector<std::int32_t>() == std::vector<std::int32_t>(4, 0));

  const std::vector<float> f = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  CHECK(Tensor::from_vector(f, {2, 3}).to_vector<float>() == f);
  const std::vector<double> d = {0.1, 0.2, 0.3};
  CHECK(Tensor::from_vector(d, {3}).to_vector<double>() == d);
  const std::vector<std::int32_t> i = {7, -8, 9, 2147483647};
  const Tensor ti = Tensor::from_vector(i, {2, 2});
  CHECK(ti.dtype() == DType::kI32);
  CHECK(ti.to_vector<std::int32_t>() == i);
  const std::vector<std::uint8_t> u = {0, 255, 17};
  CHECK(Tensor::from_vector(u, {3}).to_vector<std::uint8_t>() == u);
  CHECK_THROWS_WITH(Tensor::from_vector(f, {4}), Catch::Contains("6 values for shape [4]"));

  // Zero-element tensors are valid.
  const Tensor none = Tensor::zeros({0, 3}, DType::kF32);
  CHECK(none.numel() == 0);
  CHECK(none.to_vector<float>().empty());

  // An undefined tensor has no data.
  const Tensor undefined;
  CHECK_FALSE(undefined.defined());
  CHECK(undefined.describe() == "undefined tensor");
  CHECK_THROWS_AS(undefined.raw_data(), Error);

  CHECK(shape_string({}) == "[]");
  CHECK(shape_string({2, 3}) == "[2, 3]");
  CHECK(shape_numel({}) == 1);
  CHECK(contiguous_strides({2, 3, 4}) == Shape{12, 4, 1});
}

TEST_CASE("Tensor view infers -1 and rejects wrong element counts and non-contiguous tensors", "[core]") {
  const Tensor t = iota({3, 4});
  Tensor v = t.view({2, -1, 3});  // written below
  CHECK(v.shape() == Shape{2, 2, 3});
  CHECK(v.strides() == Shape{6, 3, 1});
  CHECK(v.shares_storage(t));
  CHECK(v.to_vector<float>() == t.to_vector<float>());
  CHECK(t.view({-1}).shape() == Shape{12});
  CHECK(t.view({12, 1}).shape() == Shape{12, 1});

  // Writes through the view are seen by the original.
  v.data<float>()[5] = 100.0f;
  CHECK(t.to_vector<float>()[5] == 100.0f);

  CHECK_THROWS_WITH(t.view({5, 3}), Catch::Contains("element counts differ"));
  CHECK_THROWS_WITH(t.view({5, -1}), Catch::Contains("element counts differ"));  // 12 / 5 does not divide
  CHECK_THROWS_AS(t.view({-1, -1}), Error);                                      // two unknowns
  CHECK_THROWS_AS(t.view({-2, 6}), Error);
  CHECK_THROWS_WITH(t.transpose(0, 1).view({12}), Catch::Contains("non-contiguous"));
  CHECK_THROWS_WITH(t.narrow(1, 0, 2).view({6}), Catch::Contains("non-contiguous"));

  // A narrow along the first dimension is still contiguous and can be viewed.
  const Tensor rows = t.narrow(0, 1, 2).view({8});
  CHECK(rows.to_vector<float>() == std::vector<float>{4, 100, 6, 7, 8, 9, 10, 11});

  // With zero elements the size of a -1 dimension cannot be inferred.
  const Tensor empty = Tensor::zeros({0, 4}, DType::kF32);
  CHECK(empty.view({4, 0}).shape() == Shape{4, 0});
  CHECK(empty.view({-1, 4}).shape() == Shape{0, 4});
  CHECK_THROWS_AS(empty.view({0, -1}), Error);
}

TEST_CASE("Tensor narrow and transpose are views that share storage with the right strides", "[core]") {
  const Tensor t = iota({2, 3, 4});  // element (i, j, k) = 12 i + 4 j + k

  const Tensor n = t.narrow(1, 1, 2);  // [2, 2, 4]
  CHECK(n.shape() == Shape{2, 2, 4});
  CHECK(n.strides() == Shape{12, 4, 1});
  CHECK(n.shares_storage(t));
  CHECK_FALSE(n.is_contiguous());
  CHECK(n.data<float>() == t.data<float>() + 4);
  CHECK(n.to_vector<float>() == std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23});
  CHECK(t.narrow(-1, 3, 1).to_vector<float>() == std::vector<float>{3, 7, 11, 15, 19, 23});
  CHECK(t.narrow(0, 1, 0).numel() == 0);
  CHECK_THROWS_WITH(t.narrow(1, 2, 2), Catch::Contains("out of range"));
  CHECK_THROWS_AS(t.narrow(1, -1, 1), Error);
  CHECK_THROWS_AS(t.narrow(3, 0, 1), Error);

  // A narrow of a narrow accumulates the offset.
  const Tensor nn = n.narrow(2, 2, 2);  // [2, 2, 2], first element (0, 1, 2)
  CHECK(nn.data<float>() == t.data<float>() + 6);
  CHECK(nn.to_vector<float>() == std::vector<float>{6, 7, 10, 11, 18, 19, 22, 23});

  const Tensor tr = t.transpose(0, 2);  // [4, 3, 2]
  CHECK(tr.shape() == Shape{4, 3, 2});
  CHECK(tr.strides() == Shape{1, 4, 12});
  CHECK(tr.shares_storage(t));
  CHECK_FALSE(tr.is_contiguous());
  CHECK(t.transpose(-1, 0).strides() == tr.strides());
  CHECK_THROWS_AS(t.transpose(0, 3), Error);

  // Writing through a view changes the shared storage.
  tr.narrow(0, 3, 1).narrow(1, 2, 1).narrow(2, 1, 1).data<float>()[0] = -1.0f;  // element (1, 2, 3) of t
  CHECK(t.to_vector<float>()[12 + 8 + 3] == -1.0f);
}

TEST_CASE("Tensor widen grows a narrowed view back within its storage and no further", "[core]") {
  const Tensor t = iota({4, 3, 2});                       // element (i, j, k) = 6 i + 2 j + k
  const Tensor view = t.narrow(0, 0, 2).narrow(1, 0, 1);  // [2, 1, 2]
  CHECK(view.capacity(0) == 4);                           // the storage's rows
  CHECK(view.capacity(1) == 3);                           // as many as fit in one row: never into the next
  CHECK(view.capacity(2) == 2);
  CHECK(t.narrow(0, 1, 2).capacity(0) == 3);  // from its offset on
  const Tensor wide = view.widen(0, 4).widen(1, 3);
  CHECK(wide.shape() == t.shape());
  CHECK(wide.shares_storage(t));
  CHECK(wide.to_vector<float>() == t.to_vector<float>());
  CHECK(view.widen(0, 1).to_vector<float>() == std::vector<float>{0, 1});  // narrower is allowed too
  CHECK_THROWS_WITH(view.widen(0, 5), Catch::Contains("beyond the storage"));
  CHECK_THROWS_WITH(view.widen(1, 4), Catch::Contains("beyond the storage"));
  CHECK_THROWS_AS(view.widen(0, -1), Error);
  CHECK(iota({3}).capacity(0) == 3);  // a whole tensor has no room to spare
}

TEST_CASE("Tensor contiguous of a transposed view copies in row-major order", "[core]") {
  const Tensor t = iota({2, 3});  // [[0 1 2] [3 4 5]]
  const Tensor tr = t.transpose(0, 1);
  const Tensor c = tr.contiguous();
  CHECK(c.shape() == Shape{3, 2});
  CHECK(c.is_contiguous());
  CHECK_FALSE(c.shares_storage(t));
  CHECK(c.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(tr.to_vector<float>() == c.to_vector<float>());

  // A 3-D permutation through two transposes.
  const Tensor u = iota({2, 3, 4}).transpose(0, 2).transpose(1, 2).contiguous();  // [4, 2, 3]: u[k, i, j]
  const std::vector<float> uv = u.to_vector<float>();
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) CHECK(uv[static_cast<std::size_t>(k * 6 + i * 3 + j)] == 12 * i + 4 * j + k);
    }
  }

  // contiguous() of a contiguous tensor is the tensor itself; clone() always copies.
  CHECK(t.contiguous().shares_storage(t));
  CHECK(t.to(Device::cpu()).shares_storage(t));
  const Tensor cl = t.clone();
  CHECK_FALSE(cl.shares_storage(t));
  CHECK(cl.to_vector<float>() == t.to_vector<float>());
  const Tensor ncl = t.narrow(1, 1, 2).clone();
  CHECK(ncl.is_contiguous());
  CHECK(ncl.to_vector<float>() == std::vector<float>{1, 2, 4, 5});
}

TEST_CASE("Tensor copy_from writes into strided views and reads from strided sources", "[core]") {
  SECTION("one row of a [B, P, X] cache") {
    const std::int64_t B = 2, P = 5, X = 3, t = 2;
    Tensor cache = Tensor::zeros({B, P, X}, DType::kF64);
    const Tensor row = Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {B, 1, X});
    Tensor slot = cache.narrow(1, t, 1);
    slot.copy_from(row);
    const std::vector<double> c = cache.to_vector<double>();
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t p = 0; p < P; ++p) {
        for (std::int64_t x = 0; x < X; ++x) {
          const double expected = p == t ? static_cast<double>(b * X + x + 1) : 0.0;
          CHECK(c[static_cast<std::size_t>((b * P + p) * X + x)] == expected);
        }
      }
    }
    // The first t + 1 rows read back as a strided view.
    CHECK(cache.narrow(1, 0, t + 1).to_vector<double>() ==
          std::vector<double>{0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0, 4, 5, 6});
  }
  SECTION("from a transposed source into a contiguous destination") {
    Tensor dst = Tensor::zeros({3, 2}, DType::kF32);
    dst.copy_from(iota({2, 3}).transpose(0, 1));
    CHECK(dst.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  }
  SECTION("from a strided source into a strided destination") {
    Tensor dst = Tensor::zeros({3, 4}, DType::kF32);
    dst.narrow(1, 1, 2).copy_from(iota({2, 3}).transpose(0, 1));  // columns 1 and 2 of dst
    CHECK(dst.to_vector<float>() == std::vector<float>{0, 0, 3, 0, 0, 1, 4, 0, 0, 2, 5, 0});
  }
  SECTION("fill_zero of a strided view zeroes only the view") {
    Tensor t = iota({2, 3});
    t.narrow(1, 1, 1).fill_zero();
    CHECK(t.to_vector<float>() == std::vector<float>{0, 0, 2, 3, 0, 5});
  }
  SECTION("mismatched shapes and dtypes are errors") {
    Tensor dst = Tensor::zeros({2, 3}, DType::kF32);
    CHECK_THROWS_WITH(dst.copy_from(iota({3, 2})), Catch::Contains("copy_from"));
    CHECK_THROWS_WITH(dst.copy_from(Tensor::zeros({2, 3}, DType::kF64)), Catch::Contains("copy_from"));
  }
}

TEST_CASE("Tensor to(DType) converts between f32, f64 and i32", "[core]") {
  const Tensor f = Tensor::from_vector(std::vector<float>{1.5f, -2.75f, 3.0f, 0.1f}, {2, 2});
  const Tensor d = f.to(DType::kF64);
  CHECK(d.dtype() == DType::kF64);
  CHECK(d.shape() == Shape{2, 2});
  CHECK(d.to_vector<double>() == std::vector<double>{1.5, -2.75, 3.0, static_cast<double>(0.1f)});
  CHECK(d.to(DType::kF32).to_vector<float>() == f.to_vector<float>());
  // Conversion to i32 truncates towards zero (C++ conversion).
  CHECK(d.to(DType::kI32).to_vector<std::int32_t>() == std::vector<std::int32_t>{1, -2, 3, 0});
  CHECK(f.to(DType::kI32).to_vector<std::int32_t>() == std::vector<std::int32_t>{1, -2, 3, 0});
  const Tensor i = Tensor::from_vector(std::vector<std::int32_t>{-7, 0, 16777217}, {3});
  CHECK(i.to(DType::kF64).to_vector<double>() == std::vector<double>{-7, 0, 16777217});
  CHECK(i.to(DType::kF32).to_vector<float>() == std::vector<float>{-7, 0, 16777216.0f});
  // Same dtype: a copy, not the same storage.
  const Tensor same = f.to(DType::kF32);
  CHECK_FALSE(same.shares_storage(f));
  CHECK(same.to_vector<float>() == f.to_vector<float>());
  // A strided source converts in row-major order.
  CHECK(f.transpose(0, 1).to(DType::kF64).to_vector<double>() ==
        std::vector<double>{1.5, 3.0, -2.75, static_cast<double>(0.1f)});
  CHECK_THROWS_AS(Tensor::zeros({2}, DType::kU8).to(DType::kF32), Error);
  CHECK_THROWS_AS(f.to(DType::kU8), Error);
}

TEST_CASE("Tensor data with the wrong element type throws", "[core]") {
  const Tensor f = Tensor::zeros({2}, DType::kF32);
  CHECK_NOTHROW(f.data<float>());
  CHECK_THROWS_WITH(f.data<double>(), Catch::Contains("dtype F32 accessed as F64"));
  CHECK_THROWS_AS(f.data<std::int32_t>(), Error);
  CHECK_THROWS_AS(Tensor::zeros({2}, DType::kI32).data<float>(), Error);
  CHECK_THROWS_AS(f.to_vector<double>(), Error);
}

TEST_CASE("Device parse accepts cpu, cuda and cuda:N and rejects anything else", "[core]") {
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cpu").is_cpu());
  CHECK(Device::parse("cuda") == Device::cuda(0));
  const Device d = Device::parse("cuda:3");
  CHECK(d.type == DeviceType::kCuda);
  CHECK(d.index == 3);
  CHECK(d.str() == "cuda:3");
  CHECK(Device::cpu().str() == "cpu");
  CHECK(Device::parse("cuda:12") == Device::cuda(12));
  CHECK(Device::cuda(1) != Device::cuda(2));
  for (const char* bad : {"gpu", "cuda:x", "cuda:-1", "cuda:", "cuda:1x", "CPU", "", "cuda:+1", " cpu"}) {
    INFO("device '" << bad << "'");
    CHECK_THROWS_WITH(Device::parse(bad), Catch::Contains("expected cpu, cuda or cuda:N"));
  }
}

TEST_CASE("Tensor storage comes from the device's caching allocator", "[core]") {
  CachingAllocator& alloc = allocator_for(Device::cpu());
  CHECK(&alloc == &allocator_for(Device::parse("cpu")));
  const std::size_t before = alloc.stats().in_use;
  {
    const Tensor t = Tensor::empty({300}, DType::kF64);  // 2400 bytes -> 2560
    CHECK(alloc.stats().in_use == before + 2560);
    const Tensor view = t.narrow(0, 0, 10);  // views do not allocate
    CHECK(alloc.stats().in_use == before + 2560);
  }
  CHECK(alloc.stats().in_use == before);
  CHECK(alloc.stats().reserved >= 2560);
}

TEST_CASE("Copies of views collapse to as few dimensions as possible", "[core]") {
  // Two dense views: one dimension. A row of a [B, P, X] cache written from a dense [B, X]: rows.
  CollapsedCopy c = collapse_copy({2, 3, 4}, {12, 4, 1}, {12, 4, 1});
  CHECK(c.shape == std::vector<std::int64_t>{24});
  CHECK(c.src_strides == std::vector<std::int64_t>{1});
  c = collapse_copy({5, 1, 8}, {8, 8, 1}, {40, 8, 1});  // dst: cache[:, p, :] of a [5, 5, 8] cache
  CHECK(c.shape == std::vector<std::int64_t>{5, 8});
  CHECK(c.src_strides == std::vector<std::int64_t>{8, 1});
  CHECK(c.dst_strides == std::vector<std::int64_t>{40, 1});
  c = collapse_copy({3, 4}, {1, 3}, {4, 1});  // a transpose made contiguous: nothing merges
  CHECK(c.shape == std::vector<std::int64_t>{3, 4});
  c = collapse_copy({1, 1}, {7, 1}, {1, 1});  // one element
  CHECK(c.shape.empty());
}

TEST_CASE("copy_strided copies every element of strided views", "[core]") {
  // A [4, 3, 5] source read through a permuted view into a dense destination, against indexing.
  std::vector<std::int32_t> src(60);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::int32_t>(i);
  const std::int64_t shape[] = {5, 4, 3};  // dims (2, 0, 1) of the source
  const std::int64_t src_strides[] = {1, 15, 5};
  const std::int64_t dst_strides[] = {12, 3, 1};
  std::vector<std::int32_t> dst(61, -7);  // the element after the output must stay
  copy_strided(src.data(), src_strides, dst.data(), dst_strides, shape, 3, sizeof(std::int32_t));
  for (std::int64_t a = 0; a < 5; ++a) {
    for (std::int64_t b = 0; b < 4; ++b) {
      for (std::int64_t c = 0; c < 3; ++c)
        CHECK(dst[static_cast<std::size_t>(a * 12 + b * 3 + c)] == b * 15 + c * 5 + a);
    }
  }
  CHECK(dst[60] == -7);
}

#if !defined(DRAGOMAN_WITH_CUDA)
TEST_CASE("A CPU-only build refuses CUDA tensors with a clear error and sees no GPU", "[core]") {
  // The CPU-only build compiles no CUDA code (kWithCuda is false): a GPU tensor cannot be made, so
  // no GPU work can be asked for, and the device queries answer without a runtime.
  STATIC_REQUIRE_FALSE(kWithCuda);
  CHECK_THROWS_WITH(Tensor::zeros({4}, DType::kF32, Device::cuda(0)),
                    Catch::Contains("cannot allocate on cuda:0: this build has no CUDA"));
  CHECK(cuda_device_count() == 0);
  CHECK(cuda_absent_reason() == "a build without CUDA");
  CHECK_THROWS_WITH(throw_no_cuda("copy to cuda:1"),
                    Catch::Equals("copy to cuda:1: this build has no CUDA (rebuild with -DDRAGOMAN_CUDA=ON)"));
  CHECK_NOTHROW(release_all());  // nothing to release on the CUDA side
}
#endif

}  // namespace dragoman
