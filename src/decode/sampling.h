// Sampled decoding (translate --sampling): instead of a beam search, each of N rows of a sentence
// draws its next token from the model's distribution, shaped by a temperature and restricted to the
// top k tokens or the top-p nucleus, until EOS (back-translation with sampled outputs, Edunov et al.
// 2018; fairseq's --sampling, --sampling-topk, --sampling-topp, --temperature).
//
// Reproducible: a draw is a pure function of (seed, the source sentence's tokens, the sample's
// number, the step) through Philox (base/philox.h), so a line's samples do not depend on the thread
// count, the batch it lands in or the lines around it (with batch-invariant log-probabilities:
// translate --deterministic on the CPU); identical lines get identical samples for one seed.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace dragoman::decode {

struct SamplingOptions {
  bool enabled = false;
  double temperature = 1.0;  // > 0: the log-probabilities are divided by it before the softmax
  int top_k = 0;             // > 0: only the k most probable tokens (0: all)
  double top_p = 1.0;        // in (0, 1]: only the most probable tokens whose probabilities sum to p
  std::uint64_t seed = 1;
};

// Throws Error when the options cannot shape a distribution (temperature <= 0 or not finite,
// top-p outside (0, 1], top-k < 0).
void check_sampling_options(const SamplingOptions& options);

// The key of a sentence's random stream: a hash of its source tokens.
std::uint64_t sampling_key(const std::vector<std::int32_t>& source);

// The uniform number in [0, 1) (53 random bits) of draw `step` of sample `sample` of the sentence
// with `key`.
double sampling_uniform(std::uint64_t seed, std::uint64_t key, std::int64_t sample, std::int64_t step);

// The tokens a row of log-probabilities [vocab] may give, with their probabilities under the
// options (temperature, top-k, top-p; renormalised): most probable first (equal: lower id first)
// when top-k or top-p restricts them, else every token in token order. `excluded` tokens (<pad>,
// <s>) are never kept.
template <typename T>
std::vector<std::pair<std::int32_t, double>> sampling_distribution(const T* log_probs, std::int64_t vocab,
                                                                   const SamplingOptions& options,
                                                                   const std::vector<std::int32_t>& excluded);
// The same into `out` (its memory reused: a sentence's rows draw one after another).
template <typename T>
void sampling_distribution(const T* log_probs, std::int64_t vocab, const SamplingOptions& options,
                           const std::vector<std::int32_t>& excluded,
                           std::vector<std::pair<std::int32_t, double>>& out);

// The token `u` (uniform in [0, 1)) picks from a distribution as above: the first whose
// cumulative probability exceeds u.
std::int32_t pick_token(const std::vector<std::pair<std::int32_t, double>>& distribution, double u);

}  // namespace dragoman::decode
