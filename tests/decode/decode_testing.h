// What the decoding tests share: a randomly initialised f64 model, and the log-probabilities of a
// given output fed to a model token by token (the plain spec the searches are checked against).
#pragma once

#include <cstdint>
#include <vector>

#include "model/transformer.h"

namespace dragoman::test {

inline Transformer random_model(const ModelConfig& config, std::uint64_t seed) {
  Transformer model(config, DType::kF64);
  model.initialize(seed);
  return model;
}

// log p(token | source, the tokens before it) of each token, then of EOS, by feeding the tokens one at
// a time.
inline std::vector<double> token_log_probs(const Transformer& model, const std::vector<std::int32_t>& source,
                                           const std::vector<std::int32_t>& tokens) {
  const ModelConfig& c = model.config();
  const Batch batch = Batch::from_sentences({source}, {{}}, c);
  DecoderState state = model.start_decoding(model.encode(batch.src, batch.src_lengths), batch.src_lengths,
                                            static_cast<std::int64_t>(tokens.size()) + 1);
  std::vector<double> out;
  std::int32_t previous = c.bos_id;
  for (std::size_t i = 0; i <= tokens.size(); ++i) {
    const std::vector<double> logp =
        model.decode_step(state, Tensor::from_vector(std::vector<std::int32_t>{previous}, {1})).to_vector<double>();
    const std::int32_t next = i < tokens.size() ? tokens[i] : c.eos_id;
    out.push_back(logp[static_cast<std::size_t>(next)]);
    previous = next;
  }
  return out;
}

// log p(tokens, EOS | source): the sum of the above.
inline double sequence_log_prob(const Transformer& model, const std::vector<std::int32_t>& source,
                                const std::vector<std::int32_t>& tokens) {
  double total = 0;
  for (const double lp : token_log_probs(model, source, tokens)) total += lp;
  return total;
}

}  // namespace dragoman::test
