// What beam search decodes with (decode/beam_search.h): one model (TransformerDecoding) or an
// ensemble of models that share a vocabulary (EnsembleDecoding). Both encode a batch of sources,
// feed one token per hypothesis row and step, and reorder or drop rows as the search goes.
//
// An ensemble's log-probabilities are the average of its models' log-probabilities (Marian's
// ensembles with equal weights; fairseq averages probabilities instead): not renormalised, so a
// hypothesis's score is the average of the models' scores of it, and an ensemble of one model
// with itself decodes exactly as the model alone ((x + x) / 2 == x). The models may differ in size
// and depth, not in their vocabulary or special ids.
//
// Cross-attention (alignments, attention pictures): when asked, each step also returns, per row,
// the probabilities with which the step's token attended to the source tokens, from one decoder
// layer's cross-attention (the last by default), averaged over heads or of one head; an
// ensemble's is the average of its models'.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/transformer.h"

namespace dragoman::decode {

// Which cross-attention a decoder records: layer and head are 0-based; -1 is the last layer, and
// the average of all heads.
struct AttentionChoice {
  std::int64_t layer = -1;
  std::int64_t head = -1;
};

struct DecodingState {
  std::vector<model::DecoderState> models;  // one per model
  // After each step, when attention is recorded: f32 [R, S] on the CPU, row r the step's token's
  // attention over the S source positions (0 beyond a source's length).
  Tensor attention;
  std::int64_t rows() const { return models.empty() ? 0 : models.front().batch_size(); }
};

class DecodingModel {
 public:
  virtual ~DecodingModel() = default;
  // The special ids and vocabulary sizes decoding uses, and its max_positions (an ensemble: the
  // smallest of its models').
  virtual const model::ModelConfig& config() const = 0;
  // Where the models are (the sources go there; log-probabilities come from there).
  virtual Device device() const = 0;
  // Encodes `batch` (its sources, on device()) and starts decoding up to `capacity` tokens with
  // `beams` rows per source; with `attention`, each step records that cross-attention.
  virtual DecodingState start(const model::Batch& batch, std::int64_t capacity, std::int64_t beams,
                              const AttentionChoice* attention) const = 0;
  // Feeds one token per row and returns the next token's log-probabilities [R, V] (on device()).
  virtual Tensor step(DecodingState& state, const Tensor& tokens) const = 0;
  // Keeps rows `rows` of the state (Transformer::select_rows).
  virtual void select_rows(DecodingState& state, const std::vector<std::int64_t>& rows, bool same_sources) const = 0;
  // Adds the sources and rows of `more` (from start(), with the same beams and attention) after
  // the state's (Transformer::append_decoding): sentences joining a running search.
  virtual void append(DecodingState& state, DecodingState more) const = 0;
  // From the next step on, log-probabilities over `pieces` alone (distinct target ids; column j is
  // pieces[j]): a vocabulary shortlist (Transformer::restrict_output).
  virtual void restrict_output(DecodingState& state, const std::vector<std::int32_t>& pieces) const = 0;
  // Whether restrict_output can be used (the output layer's rows were kept: Transformer::keep_output_rows).
  virtual bool output_restrictable() const = 0;
};

// One model. The model must outlive this.
class TransformerDecoding final : public DecodingModel {
 public:
  explicit TransformerDecoding(const model::Transformer& model) : model_(model) {}
  const model::ModelConfig& config() const override { return model_.config(); }
  Device device() const override;
  DecodingState start(const model::Batch& batch, std::int64_t capacity, std::int64_t beams,
                      const AttentionChoice* attention) const override;
  Tensor step(DecodingState& state, const Tensor& tokens) const override;
  void select_rows(DecodingState& state, const std::vector<std::int64_t>& rows, bool same_sources) const override;
  void append(DecodingState& state, DecodingState more) const override;
  void restrict_output(DecodingState& state, const std::vector<std::int32_t>& pieces) const override;
  bool output_restrictable() const override;

 private:
  const model::Transformer& model_;
};

// Several models with one vocabulary, on one device. The models must outlive this. `names` (one
// per model: their files) name them in errors: models whose vocabulary sizes or special ids
// differ are refused with a message naming both.
class EnsembleDecoding final : public DecodingModel {
 public:
  EnsembleDecoding(std::vector<const model::Transformer*> models, std::vector<std::string> names);
  const model::ModelConfig& config() const override { return config_; }
  Device device() const override;
  DecodingState start(const model::Batch& batch, std::int64_t capacity, std::int64_t beams,
                      const AttentionChoice* attention) const override;
  Tensor step(DecodingState& state, const Tensor& tokens) const override;
  void select_rows(DecodingState& state, const std::vector<std::int64_t>& rows, bool same_sources) const override;
  void append(DecodingState& state, DecodingState more) const override;
  void restrict_output(DecodingState& state, const std::vector<std::int32_t>& pieces) const override;
  bool output_restrictable() const override;
  std::size_t size() const { return models_.size(); }

 private:
  std::vector<const model::Transformer*> models_;
  model::ModelConfig config_;  // the first model's, with the smallest max_positions
};

// The decoder layer `choice` names in a decoder of `layers` layers (0-based), checked.
std::int64_t attention_layer(const AttentionChoice& choice, std::int64_t layers, std::int64_t heads);

}  // namespace dragoman::decode
