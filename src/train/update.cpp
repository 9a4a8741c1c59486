#include "train/update.h"

#include <utility>

#include "base/error.h"

namespace dragoman::train {

UpdateLoss accumulate_gradients(model::Transformer& model, const std::vector<model::Batch>& batches, bool training,
                                std::uint64_t seed, std::uint64_t first_stream, double loss_scale, Tensor* loss_sums,
                                std::int64_t update_tokens, const model::GradientReady& ready) {
  UpdateLoss total;
  for (const model::Batch& batch : batches) total.tokens += batch.target_tokens();
  const std::int64_t normaliser = update_tokens > 0 ? update_tokens : total.tokens;
  if (normaliser == 0) throw Error("train: an update without target tokens");
  model.parameters().zero_grads();
  if (batches.empty() && ready) {
    for (const model::GradientRange& range : model.gradient_buckets()) ready(range);
  }
  for (std::size_t k = 0; k < batches.size(); ++k) {
    model::ForwardActivations saved;
    const double grad_scale = loss_scale / static_cast<double>(normaliser);
    const model::LossResult r =
        model.forward_loss(batches[k], {training, seed, first_stream + k, loss_sums, grad_scale}, saved);
    const bool last = k + 1 == batches.size();
    model.backward(std::move(saved), grad_scale, last ? ready : model::GradientReady());
    total.loss_sum += r.loss_sum;
    total.nll_sum += r.nll_sum;
  }
  return total;
}

}  // namespace dragoman::train
