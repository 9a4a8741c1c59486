// The Transformer's named parameter views (internal to src/model/transformer*.cpp): the struct
// that transformer.cpp binds, and that the decoding (transformer_decode.cpp) and decoding-weight
// (transformer_weights.cpp) parts read.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "model/layers.h"
#include "model/transformer.h"

namespace dragoman::model {

// Named views of every parameter and its gradient.
struct Transformer::Views {
  using AttentionParams = model::AttentionParams;
  using FeedForwardParams = model::FeedForwardParams;
  using LayerNormParams = model::LayerNormParams;
  struct Matrix {
    Tensor weight, dweight;
  };
  struct EncoderLayer {
    AttentionParams self_attn;
    LayerNormParams self_attn_norm;
    FeedForwardParams ffn;
    LayerNormParams ffn_norm;
  };
  struct DecoderLayer {
    AttentionParams self_attn, cross_attn;
    LayerNormParams self_attn_norm, cross_attn_norm;
    FeedForwardParams ffn;
    LayerNormParams ffn_norm;
  };
  Matrix src_embed, tgt_embed, output;  // [Vs, D], [Vt, D], [Vt, D] (may be the same views)
  Matrix output_bias;                   // [Vt] (undefined without config.output_bias)
  Matrix src_positions, tgt_positions;  // [P, D] learned positions (undefined when sinusoidal)
  std::vector<EncoderLayer> encoder;
  std::vector<DecoderLayer> decoder;
  LayerNormParams encoder_final, decoder_final;  // pre-norm only
};

}  // namespace dragoman::model
