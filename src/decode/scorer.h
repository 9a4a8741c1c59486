// Force decoding (`dragoman score`, marian-scorer, fairseq's --score-reference): the
// log-probability of given translations under a model (one, or an ensemble), each target token's
// and then EOS's, computed as beam search computes them: the decoder fed the target token by token
// (decode_step), each step's log-probability of the next given token read from the same f32 (or
// f64) log-probabilities, added in order from 0 in double. With row-invariant products
// (kernels/gemm.h) the scores of translate's own outputs are translate's, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
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
std::vector<ForcedScore> force_decode(const DecodingModel& model, const std::vector<std::vector<std::int32_t>>& sources,
                                      const std::vector<std::vector<std::int32_t>>& targets, std::int64_t batch_tokens,
                                      std::int64_t batch_sentences,
                                      const std::function<void(std::int64_t done)>& progress = {});

}  // namespace dragoman::decode
