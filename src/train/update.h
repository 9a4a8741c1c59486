// One update's gradients: forward/backward over the update's batches (update_freq of them),
// accumulated and normalised by the target tokens of the whole update, so that k batches give the
// gradient of one batch k times larger (fairseq's --update-freq, how one GPU reproduces 8).
#pragma once

#include <cstdint>
#include <vector>

#include "model/batch.h"
#include "model/transformer.h"

namespace dragoman::train {

struct UpdateLoss {
  double loss_sum = 0;  // label-smoothed, summed over the update's target tokens
  double nll_sum = 0;
  std::int64_t tokens = 0;
};

// Zeroes the model's gradients, then leaves in them d(loss_scale * loss_sum / tokens)/d(parameters)
// over all `batches`. With `training`, dropout masks come from (seed, first_stream + k) for batch k.
// loss_scale: fp16's loss scaling (the caller unscales the gradients); 1 otherwise. loss_sums: as
// ForwardOptions::loss_sums (the update's loss sums are added there, UpdateLoss's are then NaN).
// update_tokens: the target tokens of the whole update when `batches` are one data-parallel
// worker's share of it (the gradients then sum over workers to the one-worker gradient); 0: the
// batches' own. A worker whose share is empty contributes zero gradients.
// ready: called with each of the model's gradient_buckets(), in order, once the update's gradients
// in it are final (during the last batch's backward pass; at once for an empty share).
UpdateLoss accumulate_gradients(model::Transformer& model, const std::vector<model::Batch>& batches, bool training,
                                std::uint64_t seed, std::uint64_t first_stream, double loss_scale = 1.0,
                                Tensor* loss_sums = nullptr, std::int64_t update_tokens = 0,
                                const model::GradientReady& ready = {});

}  // namespace dragoman::train
