// cuda::adam_step (kernels/adam.h) against the CPU spec bit for bit: f32 and f64 masters, and
// f32 masters with a bf16 or f16 mirror written in the same pass, over awkward sizes, three steps
// (1, 2, 1000) with and without weight decay, gradient factors of 1 (none), 0.37 (read from device
// memory) and NaN (nothing changes), with sentinels after every buffer. Then ops::adam_step on GPU
// tensors equals the CPU op, with and without ops::grad_norm_factor's factor, which equals the CPU's.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/elementwise.h"

#include "core/tensor.h"
#include "kernels/adam.h"
#include "ops/adam.h"
#include "parity_testing.h"

namespace dragoman {
namespace {

using test::DeviceBuffer;
using test::random_values;

// Runs `steps` on the CPU and on the GPU from the same state and compares every buffer's bits.
// M = T: no mirror.
template <typename T, typename M>
void check_adam(std::int64_t n, double weight_decay, double factor) {
  INFO("gradient factor " << factor);
  const auto un = static_cast<std::size_t>(n);
  std::vector<T> param = random_values<T>(un, 51), m = random_values<T>(un, 52, -0.1, 0.1),
                 v = random_values<T>(un, 53, 0.0, 0.01);
  std::vector<M> mirror(un);
  DeviceBuffer<T> dparam(param), dgrad(un), dm(m), dv(v);
  DeviceBuffer<M> dmirror(un);
  DeviceBuffer<double> dfactor(std::vector<double>{factor});
  const double* gpu_factor = factor == 1.0 ? nullptr : dfactor.get();
  std::uint32_t seed = 54;
  for (const std::int64_t step : {1, 2, 1000}) {
    INFO("step " << step);
    ops::AdamHyper hyper;
    hyper.lr = 1e-3;
    hyper.weight_decay = weight_decay;
    hyper.step = step;
    const std::vector<T> grad = random_values<T>(un, seed++, -2.0, 2.0);
    dgrad.upload(grad);
    if constexpr (std::is_same_v<M, T>) {
      cpu::adam_step<T>(param.data(), grad.data(), m.data(), v.data(), n, hyper, factor);
      cuda::adam_step<T>(dparam.get(), dgrad.get(), dm.get(), dv.get(), n, hyper, gpu_factor, test::test_stream());
    } else {
      cpu::adam_step<M>(param.data(), grad.data(), m.data(), v.data(), n, hyper, mirror.data(), factor);
      cuda::adam_step<M>(dparam.get(), dgrad.get(), dm.get(), dv.get(), n, hyper, dmirror.get(), gpu_factor,
                         test::test_stream());
      test::check_bits(dmirror.download(), mirror, "mirror");
    }
    test::check_bits(dparam.download(), param, "param");
    test::check_bits(dm.download(), m, "m");
    test::check_bits(dv.download(), v, "v");
  }
  for (DeviceBuffer<T>* b : {&dparam, &dgrad, &dm, &dv}) b->check_sentinel();
  dmirror.check_sentinel();
  dfactor.check_sentinel();
}

}  // namespace

TEST_CASE("cuda adam_step equals the CPU spec bit for bit", "[cuda][adam]") {
  for (const std::int64_t n : test::parity_sizes()) {
    for (const double weight_decay : {0.0, 0.01}) {
      for (const double factor : {1.0, 0.37, std::numeric_limits<double>::quiet_NaN()}) {
        INFO("n = " << n << ", weight decay " << weight_decay);
        check_adam<float, float>(n, weight_decay, factor);
        check_adam<double, double>(n, weight_decay, factor);
        check_adam<float, bf16>(n, weight_decay, factor);
        check_adam<float, f16>(n, weight_decay, factor);
      }
    }
  }
}

TEST_CASE("ops::adam_step on GPU tensors equals the CPU op", "[cuda][adam][ops]") {
  const Device gpu = Device::cuda(0);
  const std::int64_t n = 1025;
  Tensor param = Tensor::from_vector(random_values<float>(n, 61), {n});
  const Tensor grad = Tensor::from_vector(random_values<float>(n, 62), {n});
  Tensor m = Tensor::zeros({n}, DType::kF32), v = Tensor::zeros({n}, DType::kF32);
  Tensor mirror = Tensor::zeros({n}, DType::kBF16);
  Tensor gparam = param.to(gpu), gm = m.to(gpu), gv = v.to(gpu), gmirror = mirror.to(gpu);
  ops::AdamHyper hyper;
  hyper.lr = 1e-3;
  ops::adam_step(param, grad, m, v, hyper, &mirror);
  ops::adam_step(gparam, grad.to(gpu), gm, gv, hyper, &gmirror);
  CHECK(gparam.to_vector<float>() == param.to_vector<float>());
  CHECK(gm.to_vector<float>() == m.to_vector<float>());
  CHECK(gv.to_vector<float>() == v.to_vector<float>());
  CHECK(gmirror.to(DType::kF32).to_vector<float>() == mirror.to(DType::kF32).to_vector<float>());

  // The norm and factor computed on the GPU equal the CPU's within the sum of squares' order (the
  // factor of a clipped update too), and an update with the CPU's factor, uploaded, equals the CPU's.
  const Tensor big_grad = Tensor::from_vector(random_values<float>(200000, 63, -3.0, 3.0), {200000});
  for (const double clip : {0.0, 1.0, 1e9}) {
    INFO("clip " << clip);
    const std::vector<double> cpu_nf = ops::grad_norm_factor(big_grad, clip, 1.0).to_vector<double>();
    const std::vector<double> gpu_nf = ops::grad_norm_factor(big_grad.to(gpu), clip, 1.0).to_vector<double>();
    CHECK(std::abs(gpu_nf[0] - cpu_nf[0]) <= 1e-13 * cpu_nf[0]);
    CHECK(std::abs(gpu_nf[1] - cpu_nf[1]) <= 1e-13 * cpu_nf[1]);
    CHECK((clip == 1.0) == (cpu_nf[1] < 1.0));
  }
  const Tensor nf = ops::grad_norm_factor(grad, 0.5, 1.0);
  const Tensor gnf = nf.to(gpu);
  ops::adam_step(param, grad, m, v, hyper, &mirror, &nf);
  ops::adam_step(gparam, grad.to(gpu), gm, gv, hyper, &gmirror, &gnf);
  CHECK(gparam.to_vector<float>() == param.to_vector<float>());
  CHECK(gm.to_vector<float>() == m.to_vector<float>());
  CHECK(gmirror.to(DType::kF32).to_vector<float>() == mirror.to(DType::kF32).to_vector<float>());
  const Tensor infinite = Tensor::from_vector(std::vector<float>{1.0f, std::numeric_limits<float>::infinity()}, {2});
  const std::vector<double> bad = ops::grad_norm_factor(infinite.to(gpu), 1.0, 1.0).to_vector<double>();
  CHECK(std::isinf(bad[0]));
  CHECK(std::isnan(bad[1]));
}

}  // namespace dragoman
