// What the model tests share: the numpy fixtures' batches, tiny configs, and a float64
// finite-difference gradient checker.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "model/batch.h"
#include "model/config.h"

namespace dragoman::test {

// The batch of a tests/fixtures/model/*.json case.
model::Batch batch_from_json(const nlohmann::json& fixture);

// The three configurations of the numpy fixtures (post_shared_tied, pre_untied_learned,
// post_tied_only), by name.
model::ModelConfig fixture_config(const std::string& name);
extern const std::vector<std::string> kFixtureCases;

// A random-ish f64/f32 tensor: uniform in [-scale, scale) from (seed, rng_stream).
Tensor random_tensor(const Shape& shape, DType dtype, std::uint64_t rng_stream, double scale = 1.0);

// Compares an analytic gradient with central finite differences of `loss` over the elements of
// `param` (a contiguous f64 tensor perturbed in place and restored). Checks every element when
// there are at most `max_checked`, otherwise `max_checked` elements spread over the tensor.
// Passes when |numeric - analytic| <= tolerance * max(1, |numeric|); reports the worst element.
struct GradientCheck {
  double worst_error = 0;
  std::int64_t worst_index = -1;
  double numeric = 0, analytic = 0;
  std::int64_t checked = 0;
};
// `skip(i)`, when given, leaves element i out (a gradient that is not the loss's derivative by design).
GradientCheck check_gradient(const std::function<double()>& loss, Tensor& param, const Tensor& analytic,
                             std::int64_t max_checked = 1 << 30, double step = 1e-5,
                             const std::function<bool(std::int64_t)>& skip = {});

}  // namespace dragoman::test
