// What the decoding tests share: a randomly initialised f64 model (and one over the letters
// vocabulary of test::write_letters_vocabulary), the log-probabilities of a given output fed to a
// model token by token (the plain spec the searches are checked against), and the text a temporary
// output file holds.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "model/transformer.h"

namespace dragoman::test {

inline model::Transformer random_model(const model::ModelConfig& config, std::uint64_t seed) {
  model::Transformer model(config, DType::kF64);
  model.initialize(seed);
  return model;
}

// log p(token | source, the tokens before it) of each token, then of EOS, by feeding the tokens one at
// a time.
inline std::vector<double> token_log_probs(const model::Transformer& model, const std::vector<std::int32_t>& source,
                                           const std::vector<std::int32_t>& tokens) {
  const model::ModelConfig& c = model.config();
  const model::Batch batch = model::Batch::from_sentences({source}, {{}}, c);
  model::DecoderState state = model.start_decoding(model.encode(batch.src, batch.src_lengths), batch.src_lengths,
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
inline double sequence_log_prob(const model::Transformer& model, const std::vector<std::int32_t>& source,
                                const std::vector<std::int32_t>& tokens) {
  double total = 0;
  for (const double lp : token_log_probs(model, source, tokens)) total += lp;
  return total;
}

// A model of 7 pieces (pad, unk, bos, eos and three more): one layer each side, d_model 8, so
// that a search can be checked against every output there is.
inline model::ModelConfig small_vocab_config() {
  model::ModelConfig c;
  c.encoder_layers = c.decoder_layers = 1;
  c.d_model = 8;
  c.d_ff = 16;
  c.heads = 2;
  c.dropout = 0;
  c.label_smoothing = 0;
  c.max_positions = 16;
  c.src_vocab_size = c.tgt_vocab_size = 7;
  return c;
}

// A random model over the letters vocabulary (25 pieces): one layer each side, d_model 16, in
// float64 so that results compare exactly across batchings.
inline model::Transformer letters_model(std::int64_t max_positions) {
  model::ModelConfig c;
  c.encoder_layers = c.decoder_layers = 1;
  c.d_model = 16;
  c.d_ff = 32;
  c.heads = 2;
  c.dropout = 0;
  c.label_smoothing = 0;
  c.max_positions = max_positions;
  c.src_vocab_size = c.tgt_vocab_size = 25;
  return random_model(c, 5);
}

// What `file` holds from its start.
inline std::string contents(std::FILE* file) {
  std::string text;
  std::rewind(file);
  char buffer[256];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  return text;
}

}  // namespace dragoman::test
