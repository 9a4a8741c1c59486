// The Transformer (Vaswani et al., 2017) as docs/MODEL.md specifies it: encoder, decoder, output
// projection and label-smoothed loss, with an explicit backward pass, and incremental decoding with
// cached keys and values for beam search.
//
// Usage for training:  zero_grads(); ForwardActivations a; forward_loss(batch, {training, seed, step}, a);
// backward(std::move(a), scale); then one optimizer call over parameters().values() / grads().
// Gradients accumulate across forward_loss/backward pairs until zeroed. Evaluation (validation,
// scoring) is evaluate(batch): no dropout, and nothing kept for a backward pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/layers.h"
#include "model/parameters.h"

namespace dragoman::model {

// The parameters of `config`, in the flat buffers' order, with their initialisation.
std::vector<ParameterSpec> transformer_parameter_specs(const ModelConfig& config);

struct LossResult {
  double loss_sum = 0;  // label-smoothed loss summed over target tokens
  double nll_sum = 0;   // -log p(reference) summed over target tokens
  std::int64_t tokens = 0;
};

struct ForwardOptions {
  bool training = false;   // dropout on
  std::uint64_t seed = 0;  // dropout masks are a function of (seed, step)
  std::uint64_t step = 0;
  // When given (f64 [2] = {loss, nll} on the model's device), the loss sums are added there and not
  // read back: a trainer reads a whole log window's sums at once (LossResult's sums are then NaN).
  Tensor* loss_sums = nullptr;
  // Training: the loss's gradient comes out of the fused cross-entropy already multiplied by this,
  // the grad_scale that backward() will be given (the loss scale over the update's target tokens),
  // which saves backward a pass over the [tokens, V] gradient. backward() must then get the same.
  double dlogits_scale = 1.0;
};

// What backward() needs from one training forward pass: every layer's saved activations. Returned
// by forward_loss and consumed by backward, so nothing is hidden in the model between the two
// calls: an evaluation in between cannot replace a training step's activations, and they are
// released when backward is done with them (or when the caller drops them).
class ForwardActivations {
 public:
  ForwardActivations();
  ~ForwardActivations();
  ForwardActivations(ForwardActivations&&) noexcept;
  ForwardActivations& operator=(ForwardActivations&&) noexcept;
  bool empty() const { return state_ == nullptr; }

 private:
  friend class Transformer;
  struct State;
  std::unique_ptr<State> state_;
};

// An evaluation forward pass: the loss, and what tests and scoring read.
struct Evaluation {
  LossResult loss;
  Tensor log_probs;       // [B, T, V] (values at padding positions unspecified)
  Tensor encoder_output;  // [B, S, D] (values at padding positions unspecified)
};

// The decoder's incremental state: per layer, cached self-attention keys/values of the tokens fed so
// far, and the cross-attention keys/values of the encoder output (computed once). The state has
// R = N * beams rows (hypotheses); each run of `beams` consecutive rows decodes the same one of N
// sources, whose cross-attention keys/values are kept once (beam search: N sentences x K beams).
// Sources may have been fed different numbers of tokens (append_decoding: sentences that joined a
// running search): each row's keys and values are at its own positions 0 .. fed - 1 of the caches.
struct DecoderState {
  Tensor src_lengths;                    // i32 [N]
  std::vector<Tensor> cross_k, cross_v;  // per layer [N, S, H*K], [N, S, H*Kv]
  std::vector<Tensor> self_k, self_v;    // per layer [R, L, H*K], [R, L, H*Kv]: L positions allocated
                                         // (grown by doubling up to capacity as tokens are fed)
  std::int64_t beams = 1;                // rows per source
  std::vector<std::int64_t> fed;         // tokens fed so far to each source's rows [N]
  std::int64_t steps = 0;                // the most tokens fed to any source (the caches' positions in use)
  std::int64_t capacity = 0;             // the most tokens that can be fed to any source
  std::int64_t allocated_rows = 0;       // select_rows keeps the tensors this many rows large
  // On the CPU the caches are views of larger tensors where they can be: select_rows reorders and
  // drops rows in place, and append_decoding puts joining sentences in the spare rows (and the
  // cross-attention caches' spare positions) instead of copying the whole state.
  // Cross-attention that decode_step records (alignments, attention pictures): of decoder layer
  // `attention_layer` (0-based; -1: none), head `attention_head` (-1: the average of the heads),
  // as f32 [R, S] on the CPU in `attention`: each row's attention over the source positions.
  std::int64_t attention_layer = -1, attention_head = -1;
  Tensor attention;
  // A vocabulary shortlist's output layer (Transformer::restrict_output), or null: decode_step's
  // log-probabilities are then over its pieces only ([R, pieces], column j the j-th piece given).
  std::shared_ptr<const Linear> output;

  std::int64_t batch_size() const { return src_lengths.defined() ? src_lengths.dim(0) * beams : 0; }  // R
};

// A range [first, second) of the flat gradient buffer (elements), and the callback backward() calls
// when such a range is final (data parallelism starts summing it while the backward pass goes on).
using GradientRange = std::pair<std::int64_t, std::int64_t>;
using GradientReady = std::function<void(const GradientRange& range)>;

class Transformer {
 public:
  // Parameters in `dtype` (f32; f64 for gradient checks) on `device`, zero until initialize() or a
  // checkpoint fills them. The config is validated.
  Transformer(const ModelConfig& config, DType dtype = DType::kF32, Device device = Device::cpu());
  // Parameters held as `precision` says (parameters.h): training in bf16/f16 from f32 master
  // weights, or decoding-only weights in the compute dtype. Activations are in the compute dtype.
  Transformer(const ModelConfig& config, const ParameterPrecision& precision, Device device = Device::cpu());
  ~Transformer();
  Transformer(Transformer&&) noexcept;
  Transformer& operator=(Transformer&&) noexcept;

  const ModelConfig& config() const { return config_; }
  ParameterSet& parameters() { return params_; }
  const ParameterSet& parameters() const { return params_; }
  // The compute dtype: of the weights the forward reads, and of every activation.
  DType dtype() const { return params_.precision().compute; }

  // int8 decoding (translate --precision int8): every linear layer of the encoder and decoder gets
  // its weights quantized per output row (kernels/cpu/quantize.h) and computes through them, and so
  // does the output projection (an int8 copy: a tied embedding keeps its f32 rows for the inputs).
  // Needs an f32 decoding model on the CPU.
  void quantize_int8();
  bool quantized() const { return quantized_; }
  // CPU decoding: self-attention's q, k and v projections stacked into one layer (qkv), cross-
  // attention's k and v into another (kv), and every linear layer's weights (the int8 ones after
  // quantize_int8, else f32), the output projection's included, packed once for oneDNN's matmul
  // (kernels/cpu/packed_gemm.h), which then does their products. Returns the bytes packed: 0
  // where packing gains nothing (no oneDNN, or a CPU where oneDNN keeps the plain layout; the
  // stacked layers still serve). f32 results change only in the order of sums; int8 ones not at
  // all. Needs an f32 decoding model on the CPU; quantize_int8 comes first.
  std::size_t pack_weights();
  // After pack_weights, for translate: the f32 weights that decoding no longer reads (those of layers
  // with packed or int8 weights, and the q, k, v parts of stacked layers) give their memory back
  // to the system (core/allocator.h, discard_pages: the base model's 176 MB). encode/decode_step
  // keep working; the loss, evaluation and saving refuse the model from then on. Returns the bytes.
  std::size_t discard_unread_weights();
  bool weights_discarded() const { return weights_discarded_; }
  // Vocabulary shortlists (decode/shortlist.h): keep_output_rows, before pack_weights, keeps the
  // output projection's rows that packing and discard_unread_weights would give up (its int8 copy,
  // an untied f32 weight); restrict_output then makes the output layer of `pieces` (distinct target
  // ids) alone: its rows gathered in the order given (and packed, when the model is), for
  // DecoderState::output. The pieces' logits are those of the whole layer (the same rows, the same
  // products); the log-softmax is over them alone.
  void keep_output_rows();
  bool output_restrictable() const { return !packed_ || keep_output_rows_; }
  std::shared_ptr<const Linear> restrict_output(const std::vector<std::int32_t>& pieces) const;

  // docs/MODEL.md's initialisation, a function of the seed alone. `zero_residual`: the last
  // matrix of every residual branch (attention's out_proj, the feed-forward's fc2) starts at zero,
  // so every branch starts by adding nothing (pre-norm: every layer is the identity;
  // training.zero_init_residual).
  void initialize(std::uint64_t seed, bool zero_residual = false);
  // After the master weights changed outside an optimizer step that refreshes them (loading,
  // averaging, tests): rounds them into the compute weights.
  void refresh_compute_weights() { params_.refresh_compute_values(); }

  // Forward pass over a batch (dropout as options say); `saved` receives what backward() needs.
  // Returns loss and nll sums and the number of target tokens.
  LossResult forward_loss(const Batch& batch, const ForwardOptions& options, ForwardActivations& saved) const;
  // Accumulates d(grad_scale * loss_sum)/d(parameters) into parameters().grads() for the forward
  // pass that filled `saved` (which it consumes).
  // With `ready`, each range of gradient_buckets() is handed to it, in that order, as soon as this
  // pass will not add to it any more (on a GPU: once its kernels are enqueued).
  void backward(ForwardActivations&& saved, double grad_scale = 1.0, const GradientReady& ready = {});
  // The gradient buffer in the order backward() finishes it: each decoder layer (the last first),
  // each encoder layer (the last first), then the rest (embeddings, positions, output projection,
  // final norms) as contiguous ranges in ascending order. They cover the buffer exactly once.
  const std::vector<GradientRange>& gradient_buckets() const { return buckets_; }
  // The loss of a forward pass that keeps no activations (validation: options {} is evaluation
  // mode; gradient checks pass training options to see the same dropout as forward_loss).
  LossResult loss(const Batch& batch, const ForwardOptions& options = {}) const;
  // Evaluation-mode forward pass (no dropout) that keeps no activations, with its outputs.
  Evaluation evaluate(const Batch& batch) const;

  // Evaluation-mode encoder.   src: i32 [B, S], src_lengths: i32 [B] -> [B, S, D]
  Tensor encode(const Tensor& src, const Tensor& src_lengths) const;
  // A decoder state for up to `capacity` tokens (<= max_positions) over an encoder output [N, S, D],
  // with `beams` rows per source (all starting alike).
  DecoderState start_decoding(const Tensor& encoder_output, const Tensor& src_lengths, std::int64_t capacity,
                              std::int64_t beams = 1) const;
  // Feeds one token per row (BOS first) and returns the next token's log-probabilities [B, V]
  // (f32 for f32/bf16/f16 models, f64 for f64: log-probabilities are never rounded to 16 bits).
  Tensor decode_step(DecoderState& state, const Tensor& tokens) const;
  // Keeps rows `rows` of the state, in that order (beam search's reordering; rows may repeat). With
  // beams > 1, each run of `beams` new rows must come from rows of one source (their run's source
  // is kept, so runs may repeat, reorder or drop sources). same_sources: the caller promises that
  // row rows[i] decodes the same source as row i (beams of one sentence trading places), so the
  // cross-attention state is left where it is. On the CPU the caches change in place: a tensor
  // taken from the state before is no snapshot of it.
  void select_rows(DecoderState& state, const std::vector<std::int64_t>& rows, bool same_sources = false) const;
  // Adds the sources and rows of `more` (a state of this model with the same beams and recorded
  // attention, from start_decoding or decoded for some steps) after the state's own: the search
  // goes on for both, each source at its own position (serve's continuous batching). A state
  // without rows becomes `more`.
  void append_decoding(DecoderState& state, DecoderState more) const;

 private:
  struct Views;
  LossResult run_forward(const Batch& batch, const ForwardOptions& options, ForwardActivations::State* save,
                         Evaluation* evaluation) const;
  void require_cpu_decoding(const char* what) const;

  ModelConfig config_;
  ParameterSet params_;
  std::unique_ptr<Views> views_;
  std::vector<GradientRange> buckets_;
  bool quantized_ = false, packed_ = false, weights_discarded_ = false, keep_output_rows_ = false;
  std::size_t packed_bytes_ = 0;
  // The output projection for decoding (weight undefined otherwise): its int8 copy
  // (quantize_int8), its packed weights (pack_weights).
  model::Linear decoding_output_;
  Tensor sinusoids_;  // [P, D] when positions are sinusoidal
};

}  // namespace dragoman::model
