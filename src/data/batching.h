// Token-budget batching (DESIGN.md "Training"): pairs sorted by length (random order among equal
// lengths) are cut into batches of at most max_tokens source and max_tokens target tokens,
// padding counted (batch size x longest sentence, the target with its EOS), and the batches are
// shuffled. Both orders are pure functions of (seed, epoch), so an epoch's plan is rebuilt exactly
// after a resume and the data position is just (epoch, batch index).
#pragma once

#include <cstdint>
#include <vector>

#include "data/corpus.h"
#include "model/batch.h"
#include "model/config.h"

namespace dragoman::data {

// Batches of pair indices into `corpus`. A pair longer than the budget on its own gets a batch
// of its own.
std::vector<std::vector<std::int64_t>> make_token_batches(const EncodedCorpus& corpus, std::int64_t max_tokens,
                                                          std::uint64_t seed, std::int64_t epoch);

// The padded batch of the given pairs (BOS/EOS added to the target).
Batch make_batch(const EncodedCorpus& corpus, const std::vector<std::int64_t>& pairs, const ModelConfig& config);

}  // namespace dragoman::data
