// The batch of an update whatever the hardware: training.tokens_per_update fixes the tokens of an
// update, and each start derives the batches every worker accumulates (update_freq) from it, the
// number of data-parallel workers (all processes') and training.max_tokens. The paper's 25,000
// tokens with max_tokens 3125 are 8 batches: update_freq 8 on one GPU, 1 on eight, 4 on two, and a
// checkpoint moves between them.
#pragma once

#include <cstdint>
#include <string>

#include "train/config.h"

namespace dragoman::train {

// How far the derived batch may miss tokens_per_update: workers x update_freq x max_tokens within
// this share of it, or the run is refused with the max_tokens that would meet it.
inline constexpr double kTokensPerUpdateMargin = 0.10;

struct Accumulation {
  std::int64_t update_freq = 1;  // batches per worker per update
  std::int64_t batches = 1;      // batches per update: workers x update_freq
  std::int64_t tokens = 0;       // tokens per update at most: batches x max_tokens
  bool derived = false;          // from tokens_per_update (else update_freq as given, or 1)
};

// training.update_freq when given (or 1), else derived from training.tokens_per_update for
// `workers` workers: the update_freq >= 1 whose workers x update_freq x max_tokens is nearest. A
// derived batch that misses tokens_per_update by more than kTokensPerUpdateMargin throws an Error
// naming the max_tokens values that meet it on these workers.
Accumulation resolve_accumulation(const TrainingConfig& training, std::int64_t workers);

// "25,000 tokens per update: 8 batches of at most 3,125 (2 workers x update_freq 4)", for the log.
std::string describe(const Accumulation& accumulation, const TrainingConfig& training, std::int64_t workers);

}  // namespace dragoman::train
