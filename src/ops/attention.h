// Multi-head scaled dot-product attention on tensors (kernels/attention.h).
// q: [B, T, H*K]; k: [B, S, H*K]; v: [B, S, H*Kv]. k and v may be strided views whose rows are
// contiguous (a key/value cache narrowed to its first S rows). key_lengths: i32 [B] on q's device or
// the CPU.
// q, k, v, out, dout, dq, dk, dv are activations of one dtype (f64, f32, bf16 or f16); the saved
// log-sum-exp is a statistic, of accumulator_dtype (f32 for f32, bf16, f16; ops/dispatch.h).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace dragoman::ops {

struct AttentionOptions {
  std::int64_t heads = 1;
  bool causal = false;
  std::int64_t query_offset = 0;  // position of query 0 for the causal mask
  double dropout = 0;             // attention dropout on the probabilities
  std::uint64_t seed = 0, rng_stream = 0;
};

// What the backward pass needs besides the operands: the log-sum-exp of each query's scores. The
// probabilities and the dropout mask are recomputed from it (kernels/attention.h), so no
// [B, H, T, S] tensor outlives the forward pass.
struct AttentionSaved {
  Tensor lse;  // [B, H, T], accumulator_dtype(q.dtype())
};

// -> [B, T, H*Kv]. Fills *saved when given (a training forward; decoding passes nullptr).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_lengths,
                 const AttentionOptions& options, AttentionSaved* saved);

// The attention probabilities of q over k (no dropout; 0 where masked) -> f32 [B, H, T, S] on the
// CPU, whatever q's dtype and device: alignments and attention pictures read them on the host. A
// CUDA operand is copied to the host for this (only done when such output is asked for).
Tensor attention_probabilities(const Tensor& q, const Tensor& k, const Tensor& key_lengths,
                               const AttentionOptions& options);

struct AttentionGrads {
  Tensor dq, dk, dv;  // shapes of q, k, v (contiguous)
};

AttentionGrads attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_lengths,
                                  const AttentionOptions& options, const AttentionSaved& saved, const Tensor& dout);

}  // namespace dragoman::ops
