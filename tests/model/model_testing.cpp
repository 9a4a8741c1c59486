// Model test helpers (see model_testing.h).
#include "model/model_testing.h"

#include <algorithm>
#include <cmath>

#include "base/philox.h"

namespace dragoman::test {

const std::vector<std::string> kFixtureCases = {"post_shared_tied", "pre_untied_learned", "post_tied_only"};

namespace {

Tensor ids_from_json(const nlohmann::json& rows) {
  std::vector<std::int32_t> ids;
  for (const auto& row : rows) {
    for (const auto& id : row) ids.push_back(id.get<std::int32_t>());
  }
  return Tensor::from_vector(ids, {static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows[0].size())});
}

Tensor lengths_from_json(const nlohmann::json& lengths) {
  return Tensor::from_vector(lengths.get<std::vector<std::int32_t>>(), {static_cast<std::int64_t>(lengths.size())});
}

}  // namespace

model::Batch batch_from_json(const nlohmann::json& f) {
  return {ids_from_json(f["src"]), lengths_from_json(f["src_lengths"]), ids_from_json(f["tgt_in"]),
          ids_from_json(f["tgt_out"]), lengths_from_json(f["tgt_lengths"])};
}

model::ModelConfig fixture_config(const std::string& name) {
  model::ModelConfig c;
  c.dropout = c.attention_dropout = c.relu_dropout = 0;
  if (name == "post_shared_tied") {
    c.encoder_layers = c.decoder_layers = 2;
    c.d_model = 16, c.d_ff = 32, c.heads = 2, c.max_positions = 32;
    c.label_smoothing = 0.1;
    c.src_vocab_size = c.tgt_vocab_size = 23;
  } else if (name == "pre_untied_learned") {
    c.encoder_layers = c.decoder_layers = 2;
    c.d_model = 12, c.d_ff = 20, c.heads = 3, c.d_k = 6, c.d_v = 5, c.max_positions = 16;
    c.positions = model::PositionKind::kLearned;
    c.share_embeddings = c.tie_output = false;
    c.norm = model::NormPlacement::kPre;
    c.label_smoothing = 0.2;
    c.src_vocab_size = 19, c.tgt_vocab_size = 23;
  } else {  // post_tied_only
    c.encoder_layers = 1, c.decoder_layers = 3;
    c.d_model = 8, c.d_ff = 16, c.heads = 2, c.max_positions = 16;
    c.share_embeddings = false;
    c.label_smoothing = 0;
    c.src_vocab_size = 17, c.tgt_vocab_size = 13;
  }
  c.validate();
  return c;
}

Tensor random_tensor(const Shape& shape, DType dtype, std::uint64_t rng_stream, double scale) {
  std::vector<double> values(static_cast<std::size_t>(shape_numel(shape)));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = scale * (2.0 * philox::uniform(1234, rng_stream, i) - 1.0);
  return Tensor::from_vector(values, shape).to(dtype);
}

GradientCheck check_gradient(const std::function<double()>& loss, Tensor& param, const Tensor& analytic,
                             std::int64_t max_checked, double step, const std::function<bool(std::int64_t)>& skip) {
  GradientCheck result;
  double* p = param.data<double>();
  const std::vector<double> grad = analytic.to_vector<double>();
  const std::int64_t n = param.numel();
  const std::int64_t count = std::min(n, max_checked);
  for (std::int64_t j = 0; j < count; ++j) {
    const std::int64_t i = count == n ? j : j * n / count + (j * 7919) % std::max<std::int64_t>(1, n / count);
    if (skip && skip(i)) continue;
    const double saved = p[i];
    p[i] = saved + step;
    const double up = loss();
    p[i] = saved - step;
    const double down = loss();
    p[i] = saved;
    const double numeric = (up - down) / (2 * step);
    const double error = std::abs(numeric - grad[static_cast<std::size_t>(i)]) / std::max(1.0, std::abs(numeric));
    ++result.checked;
    if (error >= result.worst_error) {
      result.worst_error = error;
      result.worst_index = i;
      result.numeric = numeric;
      result.analytic = grad[static_cast<std::size_t>(i)];
    }
  }
  return result;
}

}  // namespace dragoman::test
