// The optimizer step of one worker (docs/TRAINING.md, "The optimizer"): Adam over every parameter
// (the paper's), or Muon over the hidden layers' weight matrices and Adam over the rest (the
// embeddings and the output projection, layer norms and biases), as Muon's authors train.
#pragma once

#include "model/parameters.h"
#include "ops/adam.h"
#include "ops/muon.h"

namespace dragoman::train {

// Whether Muon updates this parameter under training.optimizer muon: a linear layer's [out, in]
// weight inside the encoder or decoder (not the embeddings, not a separate output projection).
bool muon_updates(const model::ParameterEntry& entry);

// Updates params from their gradients (already unscaled and clipped): Adam with `adam` over every
// parameter when muon is null; else Muon with *muon over the matrices muon_updates() takes, its
// momentum in m's slice of each (v's stays zero), and Adam over the others, which get the same
// bits as under Adam alone. The compute mirror (mixed precision) follows the master weights.
// grad_factor (Adam alone): ops::grad_norm_factor's {norm, factor}, which Adam applies to the
// gradients where they are (ops::adam_step) instead of the caller scaling them first.
void optimizer_step(model::ParameterSet& params, Tensor& m, Tensor& v, const ops::AdamHyper& adam,
                    const ops::MuonHyper* muon, const Tensor* grad_factor = nullptr);

}  // namespace dragoman::train
