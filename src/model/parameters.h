// ParameterSet: every parameter of a model in one flat buffer, its gradient in another buffer of
// the same layout, and named views into both. Zeroing, clipping, Adam, all-reduce, averaging and
// checkpointing are one call over one buffer; layers hold views (Tensor shares the storage).
//
// Precision (docs/MODEL.md, "Precision"): the master weights (what Adam updates and checkpoints
// store) are f32 (f64 for gradient checks); the forward pass reads the compute weights, a bf16/f16
// mirror of the master refreshed after every change of it (or the master itself when the dtypes
// agree); gradients are accumulator_dtype(compute) (f32 for f32/bf16/f16, f64 for f64). A model
// loaded only to decode keeps its weights in the compute dtype and has no gradients.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace dragoman::model {

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

// How a ParameterSet holds its weights.
struct ParameterPrecision {
  DType master = DType::kF32;   // updated and saved; f32/f64, or the compute dtype without gradients
  DType compute = DType::kF32;  // read by the forward pass: f32, f64, bf16 or f16
  bool gradients = true;        // a gradient buffer (training); false for decoding

  // Training in `compute` from f32 master weights (f64 stays f64).
  static ParameterPrecision training(DType compute);
  // Decoding in `compute`: the weights only, in that dtype.
  static ParameterPrecision decoding(DType compute);
  // Whether master and compute weights are one buffer.
  bool single_buffer() const { return master == compute; }
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
  // Master and compute dtype `dtype`, with gradients.
  ParameterSet(const std::vector<ParameterSpec>& specs, DType dtype, Device device);
  ParameterSet(const std::vector<ParameterSpec>& specs, const ParameterPrecision& precision, Device device);

  const ParameterPrecision& precision() const { return precision_; }
  // The master weights [total]. After changing them, call refresh_compute_values().
  Tensor& values() { return values_; }
  const Tensor& values() const { return values_; }
  // The weights the forward pass reads [total]: values() itself, or its mirror in the compute dtype.
  const Tensor& compute_values() const { return compute_values_; }
  // Rounds the master weights into the compute mirror (nothing when they are one buffer).
  void refresh_compute_values();
  // The compute mirror when it is a buffer of its own (an optimizer refreshes it in its own pass:
  // ops::adam_step), else nullptr.
  Tensor* mirror() { return precision_.single_buffer() ? nullptr : &compute_values_; }
  // [total]; undefined without gradients.
  Tensor& grads() { return grads_; }
  const Tensor& grads() const { return grads_; }
  std::int64_t size() const { return values_.defined() ? values_.numel() : 0; }
  const std::vector<ParameterEntry>& entries() const { return entries_; }

  // Views of one parameter (throws naming the parameter if there is no such name): its master
  // weights, its compute weights and its gradient (undefined without gradients). As with values()
  // and grads(), a const set hands out const views: writing a parameter (loading it, the backward
  // pass accumulating its gradient) needs a non-const set. The compute weights are written only
  // by refresh_compute_values() and the optimizer (mirror()), never through a view.
  Tensor value(const std::string& name);
  const Tensor value(const std::string& name) const;
  const Tensor compute_value(const std::string& name) const;
  Tensor grad(const std::string& name);
  const Tensor grad(const std::string& name) const;
  const ParameterEntry& entry(const std::string& name) const;
  bool contains(const std::string& name) const;

  void zero_grads();
  // Fills every parameter by its ParameterInit from counter-based random numbers: the values are
  // a function of `seed` alone (parameter i uses rng_stream i), computed in double, rounded once to
  // the master dtype (and the compute mirror refreshed). Parameters `zeroed` names start at zero
  // instead (their random numbers are not drawn; the others' values do not change).
  void initialize(std::uint64_t seed, const std::function<bool(const ParameterSpec&)>& zeroed = {});

 private:
  // The view of parameter `name` in a flat buffer (undefined when the buffer is).
  Tensor view_of(const Tensor& buffer, const std::string& name) const;

  std::vector<ParameterEntry> entries_;
  ParameterPrecision precision_;
  Tensor values_, compute_values_, grads_;
};

}  // namespace dragoman::model
