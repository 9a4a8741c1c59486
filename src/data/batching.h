// Token-budget batching (DESIGN.md "Training"): pairs sorted by length (random order among equal
// lengths) are cut into batches of at most max_tokens source and max_tokens target tokens,
// padding counted (batch size x longest sentence, the target with its EOS), and the batches are
// shuffled. Both orders are pure functions of (seed, epoch), so an epoch's plan is rebuilt exactly
// after a resume and the data position is just (epoch, batch index).
//
// A curriculum (data.curriculum, off by default) orders the first epoch from short to long
// sentences instead (Platanios et al. 2019, "Competence-based Curriculum Learning for Neural
// Machine Translation", with their square-root competence): the batches ranked by length, batch i
// of the epoch is drawn at random from the unused ones among the shortest c(i) N of the N, where
// c(i) = min(1, sqrt(i / (length N) (1 - start^2) + start^2)) grows from `start` to 1 over the first
// `length` of the epoch. Every batch is still used once; later epochs are shuffled as always.
#pragma once

#include <cstdint>
#include <vector>

#include "data/corpus.h"
#include "model/batch.h"
#include "model/config.h"

namespace dragoman::data {

struct Curriculum {
  double length = 0.0;  // the share of the first epoch over which competence reaches 1, in (0, 1]; 0: off
  double start = 0.3;   // the competence at the first batch, in (0, 1]
};

// Batches of pair indices into `corpus`. A pair longer than the budget on its own gets a batch
// of its own.
std::vector<std::vector<std::int64_t>> make_token_batches(const EncodedCorpus& corpus, std::int64_t max_tokens,
                                                          std::uint64_t seed, std::int64_t epoch,
                                                          const Curriculum& curriculum = {});

// The padded batch of the given pairs (BOS/EOS added to the target).
model::Batch make_batch(const EncodedCorpus& corpus, const std::vector<std::int64_t>& pairs,
                        const model::ModelConfig& config);

}  // namespace dragoman::data
