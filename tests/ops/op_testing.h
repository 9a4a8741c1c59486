// What the per-op tests share: the (device, dtype) cases an op's one test body runs
// for, per-dtype tolerances, the awkward sizes, sentinel-guarded output buffers, and conversions
// between tensors of any float dtype and double vectors; then the helpers of the raw-pointer kernel
// tests (random vectors, thread-count scopes) and of the float64 finite-difference gradient checks.
//
// An op test is one body taking an OpCase:
//   for (const test::OpCase& c : test::op_cases()) { DYNAMIC_SECTION(c.name) { body(c); } }
// The files of such bodies are compiled into both test binaries: into dragoman_tests, where
// op_cases() are the CPU's (f64, f32, bf16, f16), and, in a CUDA build, into dragoman_cuda_tests
// with DRAGOMAN_OP_TESTS_ON_CUDA defined, where op_cases() are the GPU's (f32, bf16, f16 on
// cuda:0; CUDA has no f64 kernels). A test of the CPU alone in such a file (a raw-pointer kernel,
// a float64 finite-difference check) is a DRAGOMAN_CPU_TEST_CASE: registered in the CPU binary
// only.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/numeric.h"
#include "base/philox.h"
#include "core/tensor.h"
#include "device/cpu/threads.h"
#include "model/model_testing.h"
#include "ops/elementwise.h"

// Checks that `expr` throws a dragoman::Error whose message starts with "OP: " and contains `fragment`.
#define DRAGOMAN_CHECK_OP_ERROR(expr, op, fragment)                                                  \
  do {                                                                                               \
    CHECK_THROWS_AS(expr, Error);                                                                    \
    CHECK_THROWS_WITH(expr, Catch::StartsWith(std::string(op) + ": ") && Catch::Contains(fragment)); \
  } while (false)

// A test of the CPU alone inside a file of op bodies: a TEST_CASE (TEMPLATE_TEST_CASE) in the CPU test
// binary; in the CUDA one its body is compiled (it stays well-formed) but not registered, so the GPU
// machine does not run the CPU's tests a second time.
#ifdef DRAGOMAN_OP_TESTS_ON_CUDA
#define DRAGOMAN_CPU_TEST_CASE(...) [[maybe_unused]] static void INTERNAL_CATCH_UNIQUE_NAME(dragoman_cpu_test_case_)()
#define DRAGOMAN_CPU_TEMPLATE_TEST_CASE(...) \
  template <typename TestType>               \
  [[maybe_unused]] void INTERNAL_CATCH_UNIQUE_NAME(dragoman_cpu_test_case_)()
#else
#define DRAGOMAN_CPU_TEST_CASE(...) TEST_CASE(__VA_ARGS__)
#define DRAGOMAN_CPU_TEMPLATE_TEST_CASE(...) TEMPLATE_TEST_CASE(__VA_ARGS__)
#endif

namespace dragoman::test {

struct OpCase {
  std::string name;  // "cpu f32", "cpu bf16", ...
  Device device;
  DType dtype;
};

// The cases of this test binary: cpu f64, f32, bf16, f16; or, compiled into the CUDA test binary,
// cuda f32, bf16, f16 (that binary runs only where a GPU is: tests/cuda/main.cpp).
inline std::vector<OpCase> op_cases() {
#ifdef DRAGOMAN_OP_TESTS_ON_CUDA
  return {{"cuda f32", Device::cuda(0), DType::kF32},
          {"cuda bf16", Device::cuda(0), DType::kBF16},
          {"cuda f16", Device::cuda(0), DType::kF16}};
#else
  return {{"cpu f64", Device::cpu(), DType::kF64},
          {"cpu f32", Device::cpu(), DType::kF32},
          {"cpu bf16", Device::cpu(), DType::kBF16},
          {"cpu f16", Device::cpu(), DType::kF16}};
#endif
}

// Sizes that catch off-by-one blocking and vector tails in kernels.
inline const std::vector<std::int64_t>& awkward_sizes() {
  static const std::vector<std::int64_t> sizes = {1, 7, 31, 32, 33, 255, 513, 1025};
  return sizes;
}

// The relative tolerance of a result of `dtype` against a double reference of magnitude about 1,
// after a computation of a few roundings: a few units in the last place of the storage type.
inline double tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF64: return 1e-12;
    case DType::kF32: return 1e-5;
    case DType::kF16: return 4e-3;   // 2^-10 per rounding
    case DType::kBF16: return 3e-2;  // 2^-7 per rounding
    default: return 0;
  }
}

// One unit in the last place of a value of magnitude 1 in `dtype` (its rounding step).
inline double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::kF64: return 0x1p-52;
    case DType::kF32: return 0x1p-23;
    case DType::kF16: return 0x1p-10;
    case DType::kBF16: return 0x1p-7;
    default: return 0;
  }
}

// Element i of a float tensor of any float dtype on the CPU, as a double.
inline double element(const Tensor& t, std::int64_t i) {
  switch (t.dtype()) {
    case DType::kF64: return t.data<double>()[i];
    case DType::kF32: return t.data<float>()[i];
    case DType::kBF16: return t.data<bf16>()[i].to_float();
    case DType::kF16: return t.data<f16>()[i].to_float();
    default: FAIL("element(): not a float tensor: " << t.describe()); return 0;
  }
}

// The contiguous tensor's values as doubles (copied to the CPU first).
inline std::vector<double> to_doubles(const Tensor& t) {
  const Tensor host = t.to(Device::cpu()).contiguous();
  std::vector<double> out(static_cast<std::size_t>(host.numel()));
  for (std::int64_t i = 0; i < host.numel(); ++i) out[static_cast<std::size_t>(i)] = element(host, i);
  return out;
}

// A tensor of `dtype` on `device` holding `values`, each rounded once to the dtype.
inline Tensor from_doubles(const std::vector<double>& values, const Shape& shape, DType dtype, Device device) {
  Tensor host = Tensor::empty(shape, dtype, Device::cpu());
  REQUIRE(static_cast<std::size_t>(host.numel()) == values.size());
  for (std::int64_t i = 0; i < host.numel(); ++i) {
    const double v = values[static_cast<std::size_t>(i)];
    switch (dtype) {
      case DType::kF64: host.data<double>()[i] = v; break;
      case DType::kF32: host.data<float>()[i] = static_cast<float>(v); break;
      case DType::kBF16: host.data<bf16>()[i] = bf16::from_float(static_cast<float>(v)); break;
      case DType::kF16: host.data<f16>()[i] = f16::from_float(static_cast<float>(v)); break;
      default: FAIL("from_doubles(): not a float dtype: " << dtype_name(dtype));
    }
  }
  return host.to(device);
}

// n values uniform in [offset - scale, offset + scale) from Philox (seed 99, `rng_stream`).
inline std::vector<double> random_doubles(std::int64_t n, std::uint64_t rng_stream, double scale = 1.0,
                                          double offset = 0.0) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = offset + scale * (2.0 * philox::uniform(99, rng_stream, i) - 1.0);
  return v;
}

// The same values as the dtype holds them: each rounded to `dtype` and widened back (the exact
// inputs of a reference computation for a low-precision kernel).
inline std::vector<double> rounded_to(const std::vector<double>& values, DType dtype) {
  return to_doubles(from_doubles(values, {static_cast<std::int64_t>(values.size())}, dtype, Device::cpu()));
}

// max over i of |a[i] - b[i]| / max(1, |b[i]|).
inline double max_relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::fmax(worst, std::fabs(a[i] - b[i]) / std::fmax(1.0, std::fabs(b[i])));
  }
  return worst;
}

// A kernel's output buffer of n elements followed by kSentinels guard elements of a value no
// kernel writes; intact() says whether they survived (a kernel writing past its end fails a test).
template <typename T>
class GuardedBuffer {
 public:
  static constexpr std::int64_t kSentinels = 16;
  explicit GuardedBuffer(std::int64_t n, T fill = store<T>(0))
      : n_(n), data_(static_cast<std::size_t>(n + kSentinels), fill) {
    for (std::int64_t i = n; i < n + kSentinels; ++i) data_[static_cast<std::size_t>(i)] = sentinel();
  }
  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  std::int64_t size() const { return n_; }
  bool intact() const {
    for (std::int64_t i = n_; i < n_ + kSentinels; ++i) {
      if (!same_bits(data_[static_cast<std::size_t>(i)], sentinel())) return false;
    }
    return true;
  }

 private:
  static T sentinel() { return store<T>(static_cast<acc_t<T>>(-12345.0)); }
  static bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }
  std::int64_t n_;
  std::vector<T> data_;
};

// ---- the raw-pointer kernel tests ---------------------------------------------------------------

inline std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// n float or double values uniform in [offset - scale, offset + scale) from Philox stream `rng_stream`.
template <typename T>
std::vector<T> random_values(std::int64_t n, std::uint64_t rng_stream, double scale = 1.0, double offset = 0.0) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<T>(offset + scale * (2.0 * philox::uniform(99, rng_stream, i) - 1.0));
  }
  return v;
}

// The tolerance of a result of storage type T against a double reference of magnitude ~1.
template <typename T>
double tolerance() {
  return tolerance(dtype_of<T>());
}

// Sets the compute thread count for one scope and restores the default afterwards.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n) { cpu::set_compute_threads(n); }
  ~ScopedThreads() { cpu::set_compute_threads(0); }
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;
};

// max |a[i] - b[i]|, for comparing long vectors in one assertion.
template <typename A, typename B>
double max_abs_difference(const std::vector<A>& a, const std::vector<B>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
  return worst;
}

// Calls fn(T()) with T = double, float, bf16 or f16, the storage type of `dtype`: an OpCase's body
// at the level of the raw-pointer kernels.
template <typename Fn>
void with_storage_type(DType dtype, Fn fn) {
  switch (dtype) {
    case DType::kF64: fn(double()); return;
    case DType::kF32: fn(float()); return;
    case DType::kBF16: fn(bf16()); return;
    case DType::kF16: fn(f16()); return;
    default: FAIL("with_storage_type(): not a float dtype: " << dtype_name(dtype));
  }
}

// values (exactly representable in T, e.g. from rounded_to) as elements of T.
template <typename T>
std::vector<T> to_storage(const std::vector<double>& values) {
  std::vector<T> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = store<T>(static_cast<acc_t<T>>(values[i]));
  return out;
}

// The rounding spec of a kernel over T: element i must be store<T>(x) for some x within
// rel * magnitude[i] of exact[i] (the error of acc_t<T>'s summation order), that is, by the
// monotonicity of rounding, lie in [store<T>(exact - err), store<T>(exact + err)]. When err is far
// below T's rounding step (bf16, f16) that interval is one value almost everywhere: the check is
// bit-exact except next to a rounding tie, and it fails a kernel that rounds twice.
struct RoundingCheck {
  std::int64_t bad = 0;
  std::string first;  // the first element that fails
};
template <typename T>
RoundingCheck check_rounded_once(const T* got, const std::vector<double>& exact, const std::vector<double>& magnitude,
                                 double rel) {
  RoundingCheck r;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    const double err = rel * magnitude[i];
    const double lo = load(store<T>(static_cast<acc_t<T>>(exact[i] - err)));
    const double hi = load(store<T>(static_cast<acc_t<T>>(exact[i] + err)));
    const double g = load(got[i]);
    if (g >= lo && g <= hi) continue;
    if (r.bad++ == 0) {
      r.first = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", exact " + std::to_string(exact[i]) +
                " +- " + std::to_string(err);
    }
  }
  return r;
}

// check_rounded_once over a kernel's sentinel-guarded output: fails with the first wrong element,
// and when the sentinels after it were overwritten. rel = 0: every element must be
// store<T>(exact[i]), bit for bit.
template <typename T>
void check_guarded_rounding(const std::string& what, const GuardedBuffer<T>& got, const std::vector<double>& exact,
                            const std::vector<double>& magnitude, double rel) {
  const RoundingCheck rc = check_rounded_once(got.data(), exact, magnitude, rel);
  INFO(what << " of " << exact.size() << ": " << rc.bad << " wrong; " << rc.first);
  CHECK(rc.bad == 0);
  CHECK(got.intact());
}

// 1 + |x| for each x: the magnitude of results whose error is relative, but not below 1.
inline std::vector<double> one_plus_abs(const std::vector<double>& x) {
  std::vector<double> m(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) m[i] = 1.0 + std::fabs(x[i]);
  return m;
}

// n elements of T as doubles (exact).
template <typename T>
std::vector<double> widen(const T* p, std::int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = load(p[i]);
  return out;
}

// ---- the float64 finite-difference gradient checks ------------------------------------------------

// f64 values uniform in [offset - scale, offset + scale).
inline Tensor random64(const Shape& shape, std::uint64_t rng_stream, double scale = 1.0, double offset = 0.0) {
  Tensor t = random_tensor(shape, DType::kF64, rng_stream, scale);
  double* p = t.data<double>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] += offset;
  return t;
}

inline Tensor zeros64(const Shape& shape) { return Tensor::zeros(shape, DType::kF64); }

inline Tensor ids_tensor(const std::vector<std::int32_t>& ids, const Shape& shape) {
  return Tensor::from_vector(ids, shape);
}

// sum(a * r) over all elements.
inline double dot(const Tensor& a, const Tensor& r) {
  REQUIRE(a.shape() == r.shape());
  const std::vector<double> av = a.to_vector<double>(), rv = r.to_vector<double>();
  double s = 0;
  for (std::size_t i = 0; i < av.size(); ++i) s += av[i] * rv[i];
  return s;
}

// Every element of `param` against central differences of `loss`; the analytic gradient must not
// be identically zero (a test that compares 0 with 0 checks nothing) unless `may_be_zero`.
inline void check_gradient(const std::string& what, const std::function<double()>& loss, Tensor& param,
                           const Tensor& grad, bool may_be_zero = false) {
  INFO(what << " " << param.describe());
  REQUIRE(grad.defined());
  REQUIRE(grad.shape() == param.shape());
  const GradientCheck check = check_gradient(loss, param, grad);
  INFO("worst element " << check.worst_index << ": numeric " << check.numeric << ", analytic " << check.analytic);
  CHECK(check.checked == param.numel());
  CHECK(check.worst_error < 1e-7);
  if (!may_be_zero) CHECK(ops::sum_squares(grad.contiguous()) > 0);
}

}  // namespace dragoman::test
