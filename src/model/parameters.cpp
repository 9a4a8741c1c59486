// ParameterSet (see parameters.h).
#include "model/parameters.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/numeric.h"
#include "base/philox.h"

namespace dragoman::model {

ParameterPrecision ParameterPrecision::training(DType compute) { return {accumulator_dtype(compute), compute, true}; }

ParameterPrecision ParameterPrecision::decoding(DType compute) { return {compute, compute, false}; }

ParameterSet::ParameterSet(const std::vector<ParameterSpec>& specs, DType dtype, Device device)
    : ParameterSet(specs, ParameterPrecision{dtype, dtype, true}, device) {}

ParameterSet::ParameterSet(const std::vector<ParameterSpec>& specs, const ParameterPrecision& precision, Device device)
    : precision_(precision) {
  if (!is_float_dtype(precision.master) || !is_float_dtype(precision.compute)) {
    throw Error(std::string("parameters: master and compute dtypes must be f32, f64, bf16 or f16, got ") +
                dtype_name(precision.master) + " and " + dtype_name(precision.compute));
  }
  if (precision.gradients && precision.master != accumulator_dtype(precision.compute)) {
    throw Error(std::string("parameters: trained master weights of ") + dtype_name(precision.compute) +
                " compute are " + dtype_name(accumulator_dtype(precision.compute)) + ", not " +
                dtype_name(precision.master));
  }
  std::int64_t offset = 0;
  for (const ParameterSpec& spec : specs) {
    if (contains(spec.name)) throw Error("duplicate parameter name '" + spec.name + "'");
    const std::int64_t n = shape_numel(spec.shape);
    entries_.push_back({spec, offset, n});
    offset += n;
  }
  values_ = Tensor::zeros({offset}, precision.master, device);
  compute_values_ = precision.single_buffer() ? values_ : Tensor::zeros({offset}, precision.compute, device);
  if (precision.gradients) grads_ = Tensor::zeros({offset}, accumulator_dtype(precision.compute), device);
}

void ParameterSet::refresh_compute_values() {
  if (!precision_.single_buffer()) compute_values_.copy_from(values_.to(precision_.compute));
}

bool ParameterSet::contains(const std::string& name) const {
  for (const ParameterEntry& e : entries_) {
    if (e.spec.name == name) return true;
  }
  return false;
}

const ParameterEntry& ParameterSet::entry(const std::string& name) const {
  for (const ParameterEntry& e : entries_) {
    if (e.spec.name == name) return e;
  }
  throw Error("no parameter named '" + name + "'");
}

Tensor ParameterSet::view_of(const Tensor& buffer, const std::string& name) const {
  const ParameterEntry& e = entry(name);
  if (!buffer.defined()) return Tensor();
  return buffer.narrow(0, e.offset, e.numel).view(e.spec.shape);
}

Tensor ParameterSet::value(const std::string& name) { return view_of(values_, name); }
const Tensor ParameterSet::value(const std::string& name) const { return view_of(values_, name); }
const Tensor ParameterSet::compute_value(const std::string& name) const { return view_of(compute_values_, name); }
Tensor ParameterSet::grad(const std::string& name) { return view_of(grads_, name); }
const Tensor ParameterSet::grad(const std::string& name) const { return view_of(grads_, name); }

void ParameterSet::zero_grads() {
  if (!grads_.defined()) throw Error("parameters: this model has no gradients (it was loaded for decoding)");
  grads_.fill_zero();
}

void ParameterSet::initialize(std::uint64_t seed, const std::function<bool(const ParameterSpec&)>& zeroed) {
  constexpr double kTwoPi = 6.283185307179586;
  std::vector<double> host(static_cast<std::size_t>(size()));
  for (std::size_t p = 0; p < entries_.size(); ++p) {
    const ParameterEntry& e = entries_[p];
    double* out = host.data() + e.offset;
    const std::uint64_t rng_stream = philox::purpose_stream(philox::Purpose::kInit, p);
    // The uniforms in (0, 1] of elements 4 b .. 4 b + 3 of the entry's stream: one Philox block.
    const auto uniforms = [&](std::int64_t block, double u[4]) {
      const philox::Block bits = philox::block_bits(seed, rng_stream, static_cast<std::uint64_t>(block));
      for (int j = 0; j < 4; ++j) u[j] = 1.0 - static_cast<double>(bits.v[j]) / 4294967296.0;
    };
    if (zeroed && zeroed(e.spec)) {
      std::fill(out, out + e.numel, 0.0);
      continue;
    }
    switch (e.spec.init) {
      case ParameterInit::kZeros: std::fill(out, out + e.numel, 0.0); break;
      case ParameterInit::kOnes: std::fill(out, out + e.numel, 1.0); break;
      case ParameterInit::kXavierUniform: {
        const double fan_out = static_cast<double>(e.spec.shape.at(0)),
                     fan_in = static_cast<double>(e.spec.shape.at(1));
        const double a = std::sqrt(6.0 / (fan_in + fan_out));
        // Element i takes uniform i (the word i % 4 of block i / 4), in parallel over blocks.
#pragma omp parallel for schedule(static)
        for (std::int64_t b = 0; b < (e.numel + 3) / 4; ++b) {
          double u[4];
          uniforms(b, u);
          for (std::int64_t i = 4 * b; i < std::min(e.numel, 4 * b + 4); ++i) out[i] = a * (2.0 * u[i - 4 * b] - 1.0);
        }
        break;
      }
      case ParameterInit::kNormal:  // Box-Muller on uniforms 2 i and 2 i + 1: two values a block
#pragma omp parallel for schedule(static)
        for (std::int64_t b = 0; b < (e.numel + 1) / 2; ++b) {
          double u[4];
          uniforms(b, u);
          for (std::int64_t i = 2 * b; i < std::min(e.numel, 2 * b + 2); ++i) {
            const double* pair = u + 2 * (i - 2 * b);
            out[i] = e.spec.std * std::sqrt(-2.0 * std::log(pair[0])) * std::cos(kTwoPi * pair[1]);
          }
        }
        break;
    }
  }
  values_.copy_from(Tensor::from_vector(host, {size()}).to(values_.dtype()).to(values_.device()));
  refresh_compute_values();
}

}  // namespace dragoman::model
