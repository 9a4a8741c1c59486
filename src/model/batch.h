// A training or scoring batch: padded source and target id matrices with their lengths.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace dragoman {

struct Batch {
  Tensor src;          // i32 [B, S], right-padded with pad_id
  Tensor src_lengths;  // i32 [B], each in [1, S]
  Tensor tgt_in;       // i32 [B, T]: BOS y1 .. yn, then pad
  Tensor tgt_out;      // i32 [B, T]: y1 .. yn EOS, then pad
  Tensor tgt_lengths;  // i32 [B] = n + 1, each in [1, T]

  std::int64_t size() const { return src.dim(0); }
  std::int64_t target_tokens() const;  // sum of tgt_lengths

  // Pads sentences of ids (no BOS/EOS; the target gets them here). Sentences must be non-empty on the
  // source side; an empty target gives the one-token output EOS.
  static Batch from_sentences(const std::vector<std::vector<std::int32_t>>& src,
                              const std::vector<std::vector<std::int32_t>>& tgt, const ModelConfig& config);

  // Throws dragoman::Error unless shapes and lengths are consistent, every real position holds a
  // non-pad id and every padding position holds pad_id.
  void validate(const ModelConfig& config) const;
};

}  // namespace dragoman
