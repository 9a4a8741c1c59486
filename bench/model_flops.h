// The floating-point work of one training step of a Transformer (model_bench's MFU column): every
// matrix product of the forward pass counted as 2 m n k, the backward pass as twice the forward
// (its two products per forward product), attention's score and context products over every key
// (the causal mask's skipped half counted too, as PaLM's MFU does), and the output projection over
// the vocabulary. Element-wise work, softmax, layer norm and Adam are not counted.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"

namespace dragoman::bench {

// Sentences of `source` and `target` tokens (padded lengths), `sentences` of them.
inline double training_step_flops(const model::ModelConfig& c, std::int64_t sentences, std::int64_t source,
                                  std::int64_t target) {
  const double d = static_cast<double>(c.d_model), f = static_cast<double>(c.d_ff);
  const double S = static_cast<double>(source), T = static_cast<double>(target);
  const double V = static_cast<double>(c.tgt_vocab_size);
  // Multiply-adds of the forward pass, per sentence.
  const double encoder_layer = S * (4 * d * d + 2 * d * f) + 2 * S * S * d;
  const double decoder_layer = T * (4 * d * d + 2 * d * f)      // self-attention's projections, feed-forward
                               + 2 * T * T * d                  // self-attention's scores and context
                               + T * 2 * d * d + S * 2 * d * d  // cross-attention's q, out; k, v of the source
                               + 2 * T * S * d;                 // cross-attention's scores and context
  const double forward = static_cast<double>(c.encoder_layers) * encoder_layer +
                         static_cast<double>(c.decoder_layers) * decoder_layer + T * d * V;
  return 3.0 * 2.0 * forward * static_cast<double>(sentences);
}

// The dense 16-bit (bf16/fp16, tensor cores) or f32 peak of a GPU by its name, in FLOP/s; 0 when
// unknown. (H100 and H200 SXM: 989 TFLOP/s in 16 bits; f32 without TF32: 67.)
inline double gpu_peak_flops(const std::string& name, bool sixteen_bit) {
  if (name.find("H100") != std::string::npos && name.find("PCIe") != std::string::npos) {
    return sixteen_bit ? 756e12 : 51e12;
  }
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos) {
    return sixteen_bit ? 989e12 : 67e12;
  }
  if (name.find("A100") != std::string::npos) return sixteen_bit ? 312e12 : 19.5e12;
  return 0;
}

}  // namespace dragoman::bench
