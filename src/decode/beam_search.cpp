#include "decode/beam_search.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>

#include "base/error.h"
#include "ops/top_k.h"

namespace dragoman::decode {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

bool better(const Hypothesis& a, const Hypothesis& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
  return a.tokens < b.tokens;
}

// The best score a live hypothesis of log-probability `log_prob` after `generated` tokens could
// still reach (log-probabilities only fall; its final length is in [generated + 1, max + 1]).
double score_bound(const SearchOptions& o, double log_prob, std::int64_t generated, std::int64_t max_length) {
  const std::int64_t shortest = generated + 1, longest = max_length + 1;
  const double by_length =
      std::max(log_prob / length_normaliser(o, shortest), log_prob / length_normaliser(o, longest));
  const double reward =
      std::max(o.word_reward * static_cast<double>(shortest), o.word_reward * static_cast<double>(longest));
  return by_length + reward;
}

// The same from a GPU's candidates (ops::top_k_rows_to_host): row r's are values/ids[r * count
// ...], its EOS value eos_values[r].
// `pieces`: the columns' target ids (a shortlist's), or empty (column j is id j).
void row_best_candidates(const ops::HostTopK& top, std::int64_t r, std::size_t count, bool eos_only,
                         const model::ModelConfig& c, const std::vector<std::int32_t>& pieces,
                         std::vector<std::pair<double, std::int32_t>>& best) {
  best.clear();
  if (eos_only) {
    best.emplace_back(static_cast<double>(top.eos_values[static_cast<std::size_t>(r)]), c.eos_id);
    return;
  }
  for (std::size_t j = 0; j < count; ++j) {
    const std::size_t at = static_cast<std::size_t>(r) * count + j;
    if (top.ids[at] < 0) break;
    const std::int32_t column = top.ids[at];
    best.emplace_back(static_cast<double>(top.values[at]),
                      pieces.empty() ? column : pieces[static_cast<std::size_t>(column)]);
  }
}

// Row `row` of the step's recorded attention, over the source's `length` tokens.
std::vector<float> attention_row(const DecodingState& state, std::int64_t row, std::int64_t length) {
  const float* values = state.attention.data<float>() + row * state.attention.dim(1);
  return std::vector<float>(values, values + length);
}

// A guide's tokens are target ids an output can hold, and the prefix and constraints fit the
// model's positions together (the length cap grows to hold them).
void check_guide(const TargetGuide& guide, const model::ModelConfig& c, const SearchOptions& o) {
  const auto check_tokens = [&c](const std::vector<std::int32_t>& tokens, const char* what) {
    for (const std::int32_t token : tokens) {
      if (token < 0 || token >= c.tgt_vocab_size || token == c.pad_id || token == c.bos_id || token == c.eos_id) {
        throw Error(std::string("beam search: a ") + what + " holds the token id " + std::to_string(token) +
                    ", which no output holds");
      }
    }
  };
  check_tokens(guide.prefix, "target prefix");
  for (const std::vector<std::int32_t>& constraint : guide.constraints) {
    if (constraint.empty()) throw Error("beam search: an empty constraint");
    check_tokens(constraint, "constraint");
  }
  const std::int64_t tokens = static_cast<std::int64_t>(guide.prefix.size()) + guide.constraint_tokens();
  if (tokens > c.max_positions - 1) {
    throw Error("beam search: a target prefix and constraints of " + std::to_string(tokens) +
                " tokens do not fit the model's " + std::to_string(c.max_positions) + " positions (" +
                std::to_string(c.max_positions - 1) + " tokens before EOS)");
  }
  if (!guide.constraints.empty() && o.sampling.enabled) {
    throw Error("beam search: constraints need the beam search, not sampling");
  }
}

}  // namespace

double length_normaliser(const SearchOptions& options, std::int64_t length) {
  const double n = static_cast<double>(length);
  switch (options.length_penalty) {
    case LengthPenalty::kGnmt: return std::pow((5.0 + n) / 6.0, options.alpha);
    case LengthPenalty::kPower: return std::pow(n, options.alpha);
    case LengthPenalty::kNone: return 1.0;
  }
  return 1.0;
}

double hypothesis_score(const SearchOptions& options, double log_prob, std::int64_t length) {
  return log_prob / length_normaliser(options, length) + options.word_reward * static_cast<double>(length);
}

std::vector<std::vector<Hypothesis>> beam_search(const model::Transformer& model,
                                                 const std::vector<std::vector<std::int32_t>>& sources,
                                                 const SearchOptions& options, const std::vector<TargetGuide>* guides) {
  return beam_search(TransformerDecoding(model), sources, options, guides);
}

BeamSearch::BeamSearch(const DecodingModel& model, SearchOptions options) : model_(model), options_(options) {
  if (options_.beam < 1) throw Error("beam search: the beam must be >= 1");
  if (options_.shortlist != nullptr && options_.shortlist->target_size() != model_.config().tgt_vocab_size) {
    throw Error("beam search: a shortlist of " + std::to_string(options_.shortlist->target_size()) +
                " target pieces for a model of " + std::to_string(model_.config().tgt_vocab_size));
  }
  if (options_.shortlist != nullptr && !model_.output_restrictable()) {
    throw Error(
        "beam search: a shortlist needs the output layer's rows, which packing gave up "
        "(Transformer::keep_output_rows before pack_weights; load_decoding_models does it for a shortlist)");
  }
  if (options_.sampling.enabled) check_sampling_options(options_.sampling);  // at once, not at the first draw
  if (options_.nbest < 1 || options_.nbest > options_.beam) throw Error("beam search: nbest must be in [1, beam]");
}

void BeamSearch::add(const std::vector<std::vector<std::int32_t>>& sources, const std::vector<std::int64_t>& ids,
                     const std::vector<TargetGuide>* guides) {
  if (ids.size() != sources.size()) throw Error("beam search: one id per source");
  if (guides != nullptr && guides->size() != sources.size()) throw Error("beam search: one guide per source");
  if (sources.empty()) return;
  const model::ModelConfig& c = model_.config();
  const SearchOptions& o = options_;
  // Encoded once; the decoder state holds K rows per sentence still searching. On a GPU model the
  // sources go to the device once; each step's log-probabilities come back to the host for the
  // bookkeeping below.
  const std::vector<std::vector<std::int32_t>> empty_targets(sources.size());
  model::Batch batch = model::Batch::from_sentences(sources, empty_targets, c);
  const Device device = model_.device();
  if (!device.is_cpu()) batch = batch.to(device, c);
  std::int64_t capacity = 1;
  std::vector<Sentence> added(sources.size());
  for (std::size_t b = 0; b < sources.size(); ++b) {
    Sentence& s = added[b];
    const double limit =
        std::floor(o.max_length_a * static_cast<double>(sources[b].size()) + static_cast<double>(o.max_length_b));
    s.id = ids[b];
    s.source_length = static_cast<std::int64_t>(sources[b].size());
    if (guides != nullptr) {
      s.guide = (*guides)[b];
      check_guide(s.guide, c, o);
    }
    const std::int64_t guided_length = static_cast<std::int64_t>(s.guide.prefix.size()) + s.guide.constraint_tokens();
    s.max_length =
        std::clamp<std::int64_t>(std::max(static_cast<std::int64_t>(limit), guided_length), 0, c.max_positions - 1);
    if (o.sampling.enabled) {  // every row a sample from the start
      const auto rows = static_cast<std::size_t>(o.beam);
      s.tokens.assign(rows, {});
      s.log_probs.assign(rows, 0.0);
      s.token_log_probs.assign(rows, {});
      s.attention.assign(rows, {});
      s.samples.resize(rows);
      std::iota(s.samples.begin(), s.samples.end(), 0);
      s.key = sampling_key(sources[b]);
    } else {
      s.tokens = {{}};
      s.log_probs = {0.0};
      s.token_log_probs = {{}};
      s.attention = {{}};
      if (!s.guide.constraints.empty()) s.constraints = {start_constraints(s.guide.constraints)};
    }
    capacity = std::max(capacity, s.max_length + 1);
  }
  DecodingState more = model_.start(batch, capacity, o.beam, o.record_attention ? &o.attention : nullptr);
  model_.append(state_, std::move(more));
  if (o.shortlist != nullptr) {  // each sentence's output pieces: its source's lists and its guide's pieces
    for (std::size_t b = 0; b < added.size(); ++b) {
      Sentence& s = added[b];
      std::vector<std::int32_t> keep = {c.pad_id, c.bos_id, c.eos_id};
      keep.insert(keep.end(), s.guide.prefix.begin(), s.guide.prefix.end());
      for (const std::vector<std::int32_t>& constraint : s.guide.constraints)
        keep.insert(keep.end(), constraint.begin(), constraint.end());
      s.pieces = o.shortlist->pieces({sources[b]}, keep);
    }
  }
  for (Sentence& s : added) {
    source_tokens_ += s.source_length;
    active_.push_back(std::move(s));
  }
  feed_.resize(active_.size() * static_cast<std::size_t>(o.beam), c.bos_id);
  if (o.shortlist != nullptr) restrict_output(false);  // the joining sentences' pieces as well
}

double BeamSearch::log_prob(const Tensor& values, std::int64_t row, std::int32_t token) const {
  const std::int32_t at_column = column(token);
  if (at_column < 0) throw Error("beam search: token " + std::to_string(token) + " is not among the output's pieces");
  const std::int64_t at = row * values.dim(1) + at_column;
  switch (values.dtype()) {
    case DType::kF32: return static_cast<double>(values.data<float>()[at]);
    case DType::kF64: return values.data<double>()[at];
    default: throw Error("beam search: log-probabilities must be f32 or f64, got " + values.describe());
  }
}

void BeamSearch::best_tokens(const Tensor& values, std::int64_t row, std::size_t count, bool eos_only,
                             std::vector<std::pair<double, std::int32_t>>& best) const {
  const model::ModelConfig& c = model_.config();
  if (eos_only) {
    best.assign(1, {log_prob(values, row, c.eos_id), c.eos_id});
    return;
  }
  const std::int64_t width = values.dim(1);
  const auto k = static_cast<std::int64_t>(count);
  const std::int32_t pad = column(c.pad_id), bos = column(c.bos_id);  // columns ascend with the ids
  switch (values.dtype()) {
    case DType::kF32: ops::top_k_row(values.data<float>() + row * width, width, k, pad, bos, best); break;
    case DType::kF64: ops::top_k_row(values.data<double>() + row * width, width, k, pad, bos, best); break;
    default: throw Error("beam search: log-probabilities must be f32 or f64, got " + values.describe());
  }
  if (!pieces_.empty()) {
    for (auto& [value, id] : best) id = token(id);
  }
}

void BeamSearch::restrict_output(bool shrink) {
  std::vector<std::int32_t> pieces;  // the union of the active sentences' pieces
  for (const Sentence& s : active_) {
    std::vector<std::int32_t> both;
    std::set_union(pieces.begin(), pieces.end(), s.pieces.begin(), s.pieces.end(), std::back_inserter(both));
    pieces = std::move(both);
  }
  if (pieces == pieces_) return;
  // Sentences that leave shrink the output only once it is a quarter too large (each restriction
  // gathers the output layer's rows again); joining ones widen it at once.
  if (shrink && 4 * pieces.size() > 3 * pieces_.size()) return;
  if (!shrink) {  // keep the pieces of the sentences being searched (they are not all active's)
    std::vector<std::int32_t> both;
    std::set_union(pieces.begin(), pieces.end(), pieces_.begin(), pieces_.end(), std::back_inserter(both));
    if (both == pieces_) return;
    pieces = std::move(both);
  }
  pieces_ = std::move(pieces);
  column_of_.assign(static_cast<std::size_t>(model_.config().tgt_vocab_size), -1);
  for (std::size_t j = 0; j < pieces_.size(); ++j)
    column_of_[static_cast<std::size_t>(pieces_[j])] = static_cast<std::int32_t>(j);
  model_.restrict_output(state_, pieces_);
}

void BeamSearch::keep(const std::vector<std::size_t>& kept, const std::vector<std::int64_t>& rows,
                      std::vector<std::int32_t> feed) {
  std::vector<Sentence> active;
  for (const std::size_t j : kept) active.push_back(std::move(active_[j]));
  for (std::size_t j = 0; j < active_.size(); ++j) {
    if (!std::binary_search(kept.begin(), kept.end(), j)) source_tokens_ -= active_[j].source_length;
  }
  active_ = std::move(active);
  feed_ = std::move(feed);
  if (active_.empty()) {
    state_ = DecodingState();  // the next sentences start a new state (and a new output)
    pieces_.clear();
    column_of_.clear();
    return;
  }
  model_.select_rows(state_, rows, false);
  if (options_.shortlist != nullptr) restrict_output(true);  // the sentences left may need fewer pieces
}

void BeamSearch::remove(const std::function<bool(std::int64_t)>& drop) {
  const std::int64_t k_max = options_.beam;
  std::vector<std::size_t> kept;
  std::vector<std::int64_t> rows;
  std::vector<std::int32_t> feed;
  for (std::size_t j = 0; j < active_.size(); ++j) {
    if (drop(active_[j].id)) continue;
    kept.push_back(j);
    for (std::int64_t k = 0; k < k_max; ++k) {
      const auto row = static_cast<std::int64_t>(j) * k_max + k;
      rows.push_back(row);
      feed.push_back(feed_[static_cast<std::size_t>(row)]);
    }
  }
  if (kept.size() != active_.size()) keep(kept, rows, std::move(feed));
}

void BeamSearch::sample_next(Sentence& s, std::int64_t first_row, std::int64_t t, const Tensor& log_probs,
                             std::vector<std::int64_t>& next_rows, std::vector<std::int32_t>& next_feed) {
  const model::ModelConfig& c = model_.config();
  const SearchOptions& o = options_;
  const std::int64_t vocab = log_probs.dim(1);
  std::vector<std::vector<std::int32_t>> tokens;
  std::vector<double> sums;
  std::vector<std::vector<double>> token_log_probs;
  std::vector<std::vector<std::vector<float>>> attention;
  std::vector<std::int64_t> samples;
  const std::vector<std::int32_t> excluded = {column(c.pad_id), column(c.bos_id)};  // columns
  std::vector<std::pair<std::int32_t, double>> distribution;  // reused by the rows
  for (std::size_t k = 0; k < s.tokens.size(); ++k) {
    const std::int64_t row = first_row + static_cast<std::int64_t>(k);
    std::int32_t token = c.eos_id;
    if (t < static_cast<std::int64_t>(s.guide.prefix.size())) {
      token = s.guide.prefix[static_cast<std::size_t>(t)];
    } else if (t < s.max_length) {
      if (log_probs.dtype() == DType::kF32) {
        sampling_distribution(log_probs.data<float>() + row * vocab, vocab, o.sampling, excluded, distribution);
      } else {
        sampling_distribution(log_probs.data<double>() + row * vocab, vocab, o.sampling, excluded, distribution);
      }
      token = this->token(pick_token(distribution, sampling_uniform(o.sampling.seed, s.key, s.samples[k], t)));
    }
    const double value = log_prob(log_probs, row, token);
    const double sum = s.log_probs[k] + value;
    std::vector<double> lps = std::move(s.token_log_probs[k]);
    lps.push_back(value);
    std::vector<std::vector<float>> att;
    if (o.record_attention) {
      att = std::move(s.attention[k]);
      att.push_back(attention_row(state_, row, s.source_length));
    }
    if (token == c.eos_id) {
      s.finished.push_back(
          {std::move(s.tokens[k]), sum, hypothesis_score(o, sum, t + 1), std::move(lps), std::move(att)});
      continue;
    }
    next_rows[first_row + static_cast<std::int64_t>(tokens.size())] = row;
    next_feed[first_row + static_cast<std::int64_t>(tokens.size())] = token;
    tokens.push_back(std::move(s.tokens[k]));
    tokens.back().push_back(token);
    sums.push_back(sum);
    token_log_probs.push_back(std::move(lps));
    attention.push_back(std::move(att));
    samples.push_back(s.samples[k]);
  }
  s.tokens = std::move(tokens);
  s.log_probs = std::move(sums);
  s.token_log_probs = std::move(token_log_probs);
  s.attention = std::move(attention);
  s.samples = std::move(samples);
}

std::vector<std::pair<std::int64_t, std::vector<Hypothesis>>> BeamSearch::step() {
  std::vector<std::pair<std::int64_t, std::vector<Hypothesis>>> done;
  if (active_.empty()) return done;
  const model::ModelConfig& c = model_.config();
  const SearchOptions& o = options_;
  const std::int64_t k_max = o.beam;
  const Device device = model_.device();
  const auto live_rows = static_cast<std::int64_t>(active_.size()) * k_max;
  const Tensor logits = model_.step(state_, Tensor::from_vector(feed_, {live_rows}).to(device));  // [A*K, V]
  // On a GPU, only each row's 2K candidates (and its EOS value) come back to the host.
  ops::HostTopK top;
  // Sampling, a prefix's forced token or constraints on a GPU: every row's distribution, on the host.
  Tensor host_logits;
  const bool guiding = std::any_of(active_.begin(), active_.end(), [](const Sentence& s) {
    return s.steps < static_cast<std::int64_t>(s.guide.prefix.size()) || !s.guide.constraints.empty();
  });
  if (o.sampling.enabled || (guiding && !device.is_cpu())) {
    host_logits = device.is_cpu() ? logits : logits.to(Device::cpu());
  }
  if (!o.sampling.enabled && !device.is_cpu()) {
    top = ops::top_k_rows_to_host(logits, 2 * k_max, column(c.pad_id), column(c.bos_id), column(c.eos_id));
  }
  std::vector<std::int64_t> next_rows(static_cast<std::size_t>(live_rows));
  std::vector<std::int32_t> next_feed(static_cast<std::size_t>(live_rows), c.eos_id);
  std::vector<std::size_t> still_active;  // positions j in active_
  std::vector<std::pair<double, std::int32_t>> best;
  std::vector<Candidate> candidates;
  std::vector<ConstraintState> states;  // constrained search: the candidates'
  for (std::size_t j = 0; j < active_.size(); ++j) {
    Sentence& s = active_[j];
    const std::int64_t t = s.steps++;  // this step's tokens are the sentence's (t + 1)-th
    const auto first_row = static_cast<std::int64_t>(j) * k_max;
    for (std::int64_t k = 0; k < k_max; ++k) next_rows[first_row + k] = first_row;  // rows without a hypothesis
    if (o.sampling.enabled) {                                                       // every sample to its EOS
      sample_next(s, first_row, t, host_logits, next_rows, next_feed);
      if (!s.tokens.empty()) {
        still_active.push_back(j);
        continue;
      }
      std::sort(s.finished.begin(), s.finished.end(), better);
      if (static_cast<int>(s.finished.size()) > o.nbest) s.finished.resize(static_cast<std::size_t>(o.nbest));
      done.emplace_back(s.id, std::move(s.finished));
      continue;
    }
    // Candidates: the 2K best extensions of each live beam hold the 2K best of all.
    candidates.clear();
    const std::int64_t live = static_cast<std::int64_t>(s.tokens.size());
    const bool constrained = !s.guide.constraints.empty();
    if (constrained)
      constrained_candidates(s, first_row, t, device.is_cpu() ? logits : host_logits, candidates, states);
    for (std::int64_t k = 0; k < live && !constrained; ++k) {
      if (t < static_cast<std::int64_t>(s.guide.prefix.size())) {  // the prefix's token, forced
        const std::int32_t token = s.guide.prefix[static_cast<std::size_t>(t)];
        const double value = log_prob(device.is_cpu() ? logits : host_logits, first_row + k, token);
        candidates.push_back({s.log_probs[k] + value, k, token, value});
        continue;
      }
      if (device.is_cpu()) {
        best_tokens(logits, first_row + k, static_cast<std::size_t>(2 * k_max), t >= s.max_length, best);
      } else {
        row_best_candidates(top, first_row + k, static_cast<std::size_t>(2 * k_max), t >= s.max_length, c, pieces_,
                            best);
      }
      for (const auto& [value, token] : best) candidates.push_back({s.log_probs[k] + value, k, token, value});
    }
    const std::size_t keep =
        constrained ? candidates.size() : std::min<std::size_t>(candidates.size(), static_cast<std::size_t>(2 * k_max));
    if (!constrained) {
      std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep), candidates.end(),
                        [](const Candidate& x, const Candidate& y) {
                          if (x.log_prob != y.log_prob) return x.log_prob > y.log_prob;
                          if (x.beam != y.beam) return x.beam < y.beam;
                          return x.token < y.token;
                        });
    }
    std::vector<std::vector<std::int32_t>> tokens;
    std::vector<double> log_probs;
    std::vector<std::vector<double>> token_log_probs;
    std::vector<std::vector<std::vector<float>>> attention;
    std::vector<ConstraintState> constraint_states;
    for (std::size_t i = 0; i < keep && static_cast<std::int64_t>(tokens.size()) < k_max; ++i) {
      const Candidate& cand = candidates[i];
      if (cand.token == c.eos_id) {
        if (static_cast<std::int64_t>(i) < k_max) {
          s.finished.push_back({s.tokens[cand.beam],
                                cand.log_prob,
                                hypothesis_score(o, cand.log_prob, t + 1),
                                s.token_log_probs[cand.beam],
                                {}});
          s.finished.back().token_log_probs.push_back(cand.token_log_prob);
          if (o.record_attention) {
            s.finished.back().attention = s.attention[cand.beam];
            s.finished.back().attention.push_back(attention_row(state_, first_row + cand.beam, s.source_length));
          }
        }
        continue;
      }
      next_rows[first_row + static_cast<std::int64_t>(tokens.size())] = first_row + cand.beam;
      next_feed[first_row + static_cast<std::int64_t>(tokens.size())] = cand.token;
      tokens.push_back(s.tokens[cand.beam]);
      tokens.back().push_back(cand.token);
      log_probs.push_back(cand.log_prob);
      if (constrained) constraint_states.push_back(std::move(states[static_cast<std::size_t>(cand.state)]));
      token_log_probs.push_back(s.token_log_probs[cand.beam]);
      token_log_probs.back().push_back(cand.token_log_prob);
      if (o.record_attention) {
        attention.push_back(s.attention[cand.beam]);
        attention.back().push_back(attention_row(state_, first_row + cand.beam, s.source_length));
      }
    }
    s.tokens = std::move(tokens);
    s.log_probs = std::move(log_probs);
    s.token_log_probs = std::move(token_log_probs);
    s.attention = std::move(attention);
    s.constraints = std::move(constraint_states);
    std::sort(s.finished.begin(), s.finished.end(), better);
    // Stop: K finished, none live, or no live hypothesis can beat the n-best finished ones.
    bool stop = static_cast<std::int64_t>(s.finished.size()) >= k_max || s.tokens.empty();
    if (!stop && static_cast<int>(s.finished.size()) >= o.nbest) {
      const double worst_kept = s.finished[static_cast<std::size_t>(o.nbest - 1)].score;
      double best_bound = kNegInf;
      for (const double lp : s.log_probs) best_bound = std::max(best_bound, score_bound(o, lp, t + 1, s.max_length));
      stop = best_bound <= worst_kept;
    }
    if (stop) {
      std::vector<Hypothesis>& f = s.finished;
      if (static_cast<int>(f.size()) > o.nbest) f.resize(static_cast<std::size_t>(o.nbest));
      done.emplace_back(s.id, std::move(f));
    } else {
      still_active.push_back(j);
    }
  }
  if (still_active.size() == active_.size()) {
    // Every row keeps its sentence: only the beams' own history moves.
    model_.select_rows(state_, next_rows, true);
    feed_ = std::move(next_feed);
    return done;
  }
  // Some sentences finished: drop their rows from the state.
  std::vector<std::int64_t> kept_rows;
  std::vector<std::int32_t> kept_feed;
  for (const std::size_t j : still_active) {
    for (std::int64_t k = 0; k < k_max; ++k) {
      kept_rows.push_back(next_rows[j * static_cast<std::size_t>(k_max) + static_cast<std::size_t>(k)]);
      kept_feed.push_back(next_feed[j * static_cast<std::size_t>(k_max) + static_cast<std::size_t>(k)]);
    }
  }
  keep(still_active, kept_rows, std::move(kept_feed));
  return done;
}

std::vector<std::vector<Hypothesis>> beam_search(const DecodingModel& model,
                                                 const std::vector<std::vector<std::int32_t>>& sources,
                                                 const SearchOptions& o, const std::vector<TargetGuide>* guides) {
  BeamSearch search(model, o);
  std::vector<std::int64_t> ids(sources.size());
  std::iota(ids.begin(), ids.end(), 0);
  search.add(sources, ids, guides);
  std::vector<std::vector<Hypothesis>> results(sources.size());
  while (!search.empty()) {
    for (auto& [id, hypotheses] : search.step()) results[static_cast<std::size_t>(id)] = std::move(hypotheses);
  }
  return results;
}

}  // namespace dragoman::decode
