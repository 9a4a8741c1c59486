// Beam search over an incremental decoder (decoding_model.h: one model or an ensemble),
// per-sentence beams over a batch: the paper's decoding (beam 4, GNMT length penalty alpha 0.6, at most source length +
// 50 output tokens). Greedy decoding is beam 1.
//
// A hypothesis's length |Y| counts its tokens including the final EOS. Its score is
//   log p(Y | X) / lp(|Y|) + word_reward * |Y|,
//   lp = ((5 + |Y|) / 6)^alpha (GNMT, Wu et al. 2016), |Y|^alpha (fairseq/Marian), or 1 (none).
// At each step the 2K best extensions (by log-probability) of the K live hypotheses are ranked;
// those among the first K that end in EOS are finished, the best K others live on. <pad> and <s>
// are never generated; after max_length tokens only EOS is. A sentence stops when K hypotheses have
// finished, or when no live hypothesis can reach the score of the n-best finished ones (the bound
// uses the most favourable length a hypothesis could still reach), or when none is left.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "decode/constraints.h"
#include "decode/decoding_model.h"
#include "decode/decoding_options.h"
#include "decode/sampling.h"
#include "decode/shortlist.h"
#include "model/transformer.h"

namespace dragoman::decode {

// The defaults are decoding_options.h's (the paper's search), where they are said why.
struct SearchOptions {
  int beam = kDefaultBeam;
  LengthPenalty length_penalty = kDefaultLengthNormalization;
  double alpha = kDefaultLengthPenalty;
  double word_reward = kDefaultWordReward;
  double max_length_a = kDefaultMaxLengthA;  // at most floor(a * source_length + b) tokens before EOS
  std::int64_t max_length_b = kDefaultMaxLengthB;
  int nbest = 1;  // hypotheses returned per sentence (<= beam)
  // Record each output token's cross-attention over the source (Hypothesis::attention): of this
  // layer and head (decoding_model.h), for alignments and attention pictures.
  bool record_attention = false;
  AttentionChoice attention;
  // Sampling instead of the beam search (decode/sampling.h): `beam` independent samples a
  // sentence, each to its EOS (or the length cap), returned best first by score; the scores and
  // token log-probabilities are the model's own (without temperature or truncation), as a beam
  // search's.
  SamplingOptions sampling;
  // A vocabulary shortlist (decode/shortlist.h; it must outlive the search), or null: the output
  // layer of the sentences searched together is then over the union of their lists (with the
  // special ids and the pieces of their target prefixes and constraints), widened as sentences join
  // and narrowed as they leave.
  const Shortlist* shortlist = nullptr;
};

struct Hypothesis {
  std::vector<std::int32_t> tokens;  // without BOS and EOS
  double log_prob = 0;               // log p(tokens, EOS | source)
  double score = 0;                  // as above
  // log p(token | source, the tokens before it) for each token, then EOS's: added in order from 0
  // they give log_prob bit for bit (the search adds them so).
  std::vector<double> token_log_probs;
  // With record_attention: for each token, then EOS, its attention over the source tokens (one
  // value per source token, summing to 1), as token_log_probs.
  std::vector<std::vector<float>> attention;
};

// The length normaliser lp(length) of a hypothesis of `length` tokens (EOS included).
double length_normaliser(const SearchOptions& options, std::int64_t length);
// A finished hypothesis's score.
double hypothesis_score(const SearchOptions& options, double log_prob, std::int64_t length);

// A beam search that sentences can join between its steps, and leave (serve's continuous
// batching): each sentence is searched as beam_search searches it, whatever else is searched
// beside it (bit for bit with row-invariant products: kernels/gemm.h). Sentences that join
// are encoded together and appended to the decoder state (DecodingModel::append), each at its
// own position; finished ones are dropped from it at once.
class BeamSearch {
 public:
  // The model must outlive the search.
  BeamSearch(const DecodingModel& model, SearchOptions options);

  // Encodes `sources` (token ids without BOS/EOS, each non-empty and within the model's positions)
  // and adds them to the search under the caller's `ids` (one per source). `guides` (one per
  // source, or none; constraints.h): a prefix's target tokens are forced as the start of the output
  // (a hypothesis's tokens, log-probabilities and attention include them) and the search goes on
  // after them; every output contains each constraint (beam search only). The length cap is at
  // least the prefix and the constraints together; a guide that does not fit the model's positions,
  // or holds a token no output holds, is an error.
  void add(const std::vector<std::vector<std::int32_t>>& sources, const std::vector<std::int64_t>& ids,
           const std::vector<TargetGuide>* guides = nullptr);
  // One decoding step of every sentence being searched; returns the sentences it finished, each
  // with its n-best hypotheses (best first).
  std::vector<std::pair<std::int64_t, std::vector<Hypothesis>>> step();
  // Stops searching the sentences whose id `drop` returns true for (their results are never returned).
  void remove(const std::function<bool(std::int64_t id)>& drop);

  std::int64_t sentences() const { return static_cast<std::int64_t>(active_.size()); }  // being searched
  std::int64_t source_tokens() const { return source_tokens_; }                         // of those
  bool empty() const { return active_.empty(); }
  const SearchOptions& options() const { return options_; }

 private:
  // What one sentence's search holds between steps.
  struct Sentence {
    std::int64_t id = 0;
    std::int64_t source_length = 0;
    std::int64_t max_length = 0;                             // tokens before EOS
    std::int64_t steps = 0;                                  // tokens fed so far
    std::vector<std::vector<std::int32_t>> tokens;           // per live beam
    std::vector<double> log_probs;                           // per live beam
    std::vector<std::vector<double>> token_log_probs;        // per live beam: each token's
    std::vector<std::vector<std::vector<float>>> attention;  // per live beam: each token's (record_attention)
    std::vector<Hypothesis> finished;
    TargetGuide guide;                         // the prefix forced, the constraints owed
    std::vector<ConstraintState> constraints;  // per live beam, when the guide has constraints
    std::uint64_t key = 0;              // sampling: the sentence's random stream (sampling_key)
    std::vector<std::int64_t> samples;  // sampling: per live row, its sample's number
    std::vector<std::int32_t> pieces;   // with a shortlist: its output pieces (Shortlist::pieces), ascending
  };
  // One of a step's extensions of a sentence's hypotheses.
  struct Candidate {
    double log_prob;
    std::int64_t beam;  // row within the sentence's beams
    std::int32_t token;
    double token_log_prob;    // the step's log-probability of `token`
    std::int64_t state = -1;  // constrained search: its ConstraintState's index
  };
  // Constrained search (constrained_search.cpp): the extensions of sentence `s` (rows from
  // first_row of the host's log-probabilities `values`) that keep room for the constraint tokens
  // each owes, in the order the step takes them: dynamic beam allocation's K first, then the best
  // of the rest by bank for the live hypotheses that EOS left free. `states` gets their states.
  void constrained_candidates(const Sentence& s, std::int64_t first_row, std::int64_t t, const Tensor& values,
                              std::vector<Candidate>& candidates, std::vector<ConstraintState>& states) const;
  // Sampling: each live row of sentence `s` (rows from first_row) draws its next token.
  void sample_next(Sentence& s, std::int64_t first_row, std::int64_t t, const Tensor& log_probs,
                   std::vector<std::int64_t>& next_rows, std::vector<std::int32_t>& next_feed);
  // The step's log-probability of `token` in row `row` of the host's log-probabilities `values`.
  double log_prob(const Tensor& values, std::int64_t row, std::int32_t token) const;
  // The `count` best next tokens of row `row` of the host's `values` (best first; equal values:
  // lower token first), leaving out <pad> and <s>, and every token but EOS when `eos_only`.
  void best_tokens(const Tensor& values, std::int64_t row, std::size_t count, bool eos_only,
                   std::vector<std::pair<double, std::int32_t>>& best) const;
  // With a shortlist: the output pieces made the union of the active sentences' (Sentence::pieces),
  // the models' output layers restricted to them. Joining sentences widen it (`shrink` false);
  // leaving ones (`shrink`) narrow it once it is a quarter too large.
  void restrict_output(bool shrink);
  // Keeps the sentences at `kept` (indices into active_, ascending) with their rows `rows` of the
  // decoder state and next tokens `feed`.
  void keep(const std::vector<std::size_t>& kept, const std::vector<std::int64_t>& rows,
            std::vector<std::int32_t> feed);

  const DecodingModel& model_;
  SearchOptions options_;
  std::vector<Sentence> active_;  // in the decoder state's order: K rows each
  DecodingState state_;
  std::vector<std::int32_t> feed_;  // the next token of each row
  // The columns of a step's log-probabilities: with a shortlist, column j is target id pieces_[j]
  // and column_of_[id] the column of id (-1: not an output); without one, column j is id j.
  std::vector<std::int32_t> pieces_, column_of_;
  std::int32_t column(std::int32_t token) const {
    return pieces_.empty() ? token : column_of_[static_cast<std::size_t>(token)];
  }
  std::int32_t token(std::int64_t column) const {
    return pieces_.empty() ? static_cast<std::int32_t>(column) : pieces_[static_cast<std::size_t>(column)];
  }
  std::int64_t source_tokens_ = 0;
};

// The n-best hypotheses of each source sentence (token ids without BOS/EOS, each non-empty and
// within the model's positions), best first.
std::vector<std::vector<Hypothesis>> beam_search(const DecodingModel& model,
                                                 const std::vector<std::vector<std::int32_t>>& sources,
                                                 const SearchOptions& options,
                                                 const std::vector<TargetGuide>* guides = nullptr);
// The same with one model.
std::vector<std::vector<Hypothesis>> beam_search(const model::Transformer& model,
                                                 const std::vector<std::vector<std::int32_t>>& sources,
                                                 const SearchOptions& options,
                                                 const std::vector<TargetGuide>* guides = nullptr);

}  // namespace dragoman::decode
