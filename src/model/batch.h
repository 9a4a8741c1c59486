// A training or scoring batch: padded source and target id matrices with their lengths.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace dragoman::model {

struct Batch {
  Tensor src;          // i32 [B, S], right-padded with pad_id
  Tensor src_lengths;  // i32 [B], each in [1, S]
  Tensor tgt_in;       // i32 [B, T]: BOS y1 .. yn, then pad
  Tensor tgt_out;      // i32 [B, T]: y1 .. yn EOS, then pad
  Tensor tgt_lengths;  // i32 [B] = n + 1, each in [1, T]
  // Target tokens (the sum of tgt_lengths) as validate() counted them; -1 until then. A batch on a
  // GPU keeps it, so its count is known without a copy back.
  std::int64_t tokens = -1;

  std::int64_t size() const { return src.dim(0); }
  std::int64_t target_tokens() const;  // sum of tgt_lengths
  Device device() const { return src.device(); }

  // Pads sentences of ids (no BOS/EOS; the target gets them here). Sentences must be non-empty on the
  // source side; an empty target gives the one-token output EOS.
  static Batch from_sentences(const std::vector<std::vector<std::int32_t>>& src,
                              const std::vector<std::vector<std::int32_t>>& tgt, const ModelConfig& config);

  // Throws dragoman::Error unless shapes and lengths are consistent, every real position holds a
  // non-pad id and every padding position holds pad_id; returns the target token count (for
  // `tokens`). (Host tensors only.)
  std::int64_t validate(const ModelConfig& config) const;

  // The batch on `device`: validated on the host first, then copied, so a batch on a GPU has been
  // checked exactly once and no kernel checks ids.
  Batch to(Device device, const ModelConfig& config) const;
  // Whether the model may use it as it is: a validated batch on a GPU, or any batch on the CPU
  // (validated by the forward pass, cheap next to it).
  bool validated_on_device() const { return !device().is_cpu() && tokens >= 0; }
};

}  // namespace dragoman::model
