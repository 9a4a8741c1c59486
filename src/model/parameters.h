// ParameterSet: every parameter of a model in one flat buffer, its gradient in another buffer of
// the same layout, and named views into both. Zeroing, clipping, Adam, all-reduce, averaging and
// checkpointing are one call over one buffer; layers hold views (Tensor shares the storage).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace dragoman {

// How a parameter starts (docs/MODEL.md, "Initialisation").
enum class ParameterInit {
  kXavierUniform,  // U(-a, a), a = sqrt(6 / (fan_in + fan_out)), for [out, in] matrices
  kNormal,         // N(0, std) (embeddings: std = d_model^-0.5)
  kZeros,
  kOnes,
};

struct ParameterSpec {
  std::string name;
  Shape shape;
  ParameterInit init = ParameterInit::kZeros;
  double std = 0;  // kNormal only
};

struct ParameterEntry {
  ParameterSpec spec;
  std::int64_t offset = 0;  // in elements, into the flat buffers
  std::int64_t numel = 0;
};

class ParameterSet {
 public:
  ParameterSet() = default;
  // Lays the parameters out in order; names must be unique. Values and gradients start at zero.
  ParameterSet(const std::vector<ParameterSpec>& specs, DType dtype, Device device);

  Tensor& values() { return values_; }  // [total]
  const Tensor& values() const { return values_; }
  Tensor& grads() { return grads_; }  // [total]
  const Tensor& grads() const { return grads_; }
  std::int64_t size() const { return values_.defined() ? values_.numel() : 0; }
  const std::vector<ParameterEntry>& entries() const { return entries_; }

  // Views of one parameter (throws naming the parameter if there is no such name).
  Tensor value(const std::string& name) const;
  Tensor grad(const std::string& name) const;
  const ParameterEntry& entry(const std::string& name) const;
  bool contains(const std::string& name) const;

  void zero_grads();
  // Fills every parameter by its ParameterInit from counter-based random numbers: the values are
  // a function of `seed` alone (parameter i uses rng_stream i), computed in double.
  void initialize(std::uint64_t seed);

 private:
  std::vector<ParameterEntry> entries_;
  Tensor values_, grads_;
};

}  // namespace dragoman
