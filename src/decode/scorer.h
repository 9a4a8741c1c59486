// Force decoding (`dragoman score`, marian-scorer, fairseq's --score-reference): the
// log-probability of given translations under a model (one, or an ensemble), each target token's
// and then EOS's, computed as beam search computes them: the decoder fed the target token by token
// (decode_step), each step's log-probability of the next given token read from the same f32 (or
// f64) log-probabilities, added in order from 0 in double. With row-invariant products
// (kernels/gemm.h) the scores of translate's own outputs are translate's, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "decode/decoding_model.h"

namespace dragoman::decode {

struct ForcedScore {
  double log_prob = 0;                  // log p(target, EOS | source)
  std::vector<double> token_log_probs;  // each target token's, then EOS's
};

// The scores of targets[i] given sources[i] (token ids without BOS/EOS; sources non-empty and
// within the model's positions, targets shorter than them), batched by source length as translate
// batches: at most `batch_tokens` source tokens (padding counted) and `batch_sentences` sentences.
// `progress`, if given, is called after each batch with the number of pairs scored so far.
// Throws Error unless force_decode can score the pair: `source` holds a token and at most
// `max_positions`, `target` with EOS at most max_positions. The messages start with
// `source_name` or `target_name` (say, "score: FILE:LINE").
void check_forced_pair(const std::vector<std::int32_t>& source, const std::vector<std::int32_t>& target,
                       std::int64_t max_positions, const std::string& source_name, const std::string& target_name);

std::vector<ForcedScore> force_decode(const DecodingModel& model, const std::vector<std::vector<std::int32_t>>& sources,
                                      const std::vector<std::vector<std::int32_t>>& targets, std::int64_t batch_tokens,
                                      std::int64_t batch_sentences,
                                      const std::function<void(std::int64_t done)>& progress = {});

}  // namespace dragoman::decode
