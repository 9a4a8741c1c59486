// Lexically constrained beam search: one step's candidates for a sentence with constraints
// (constraints.h says what is guaranteed; docs/DECODING.md, "Lexical constraints").
//
// Each live hypothesis offers its 2K best next tokens, as in the plain search, and the tokens that
// make progress on its constraints (constraints.h advancing_tokens). A candidate is kept only when
// the hypothesis still has room for the constraint tokens it would owe after it: t + 1 + owed <=
// max_length (so the continuation of the constraint in progress is always kept, and every
// hypothesis can still meet its constraints before the length cap); EOS only when nothing is owed.
// The kept candidates are ranked as the plain search ranks them, and dynamic beam allocation
// chooses K of them across the banks of constraint tokens met; those of them that end in EOS
// finish, and the live hypotheses they leave free are filled the same way from the rest.
#include <algorithm>
#include <cstddef>

#include "base/error.h"
#include "decode/beam_search.h"

namespace dragoman::decode {
void BeamSearch::constrained_candidates(const Sentence& s, std::int64_t first_row, std::int64_t t, const Tensor& values,
                                        std::vector<Candidate>& candidates,
                                        std::vector<ConstraintState>& states) const {
  const model::ModelConfig& c = model_.config();
  const std::int64_t k_max = options_.beam;
  const std::vector<std::vector<std::int32_t>>& constraints = s.guide.constraints;
  std::vector<Candidate> all;
  std::vector<ConstraintState> all_states;
  std::vector<std::pair<double, std::int32_t>> best;
  std::vector<std::int32_t> tokens;
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(s.tokens.size()); ++k) {
    const ConstraintState& state = s.constraints[static_cast<std::size_t>(k)];
    const std::int64_t row = first_row + k;
    tokens.clear();
    if (t < static_cast<std::int64_t>(s.guide.prefix.size())) {  // the prefix's token, forced
      tokens.push_back(s.guide.prefix[static_cast<std::size_t>(t)]);
    } else if (t >= s.max_length) {
      tokens.push_back(c.eos_id);  // nothing is owed here (the room kept below)
    } else {
      best_tokens(values, row, static_cast<std::size_t>(2 * k_max), false, best);
      for (const auto& [value, token] : best) tokens.push_back(token);
      advancing_tokens(state, constraints, tokens);
      std::sort(tokens.begin(), tokens.end());
      tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
    }
    for (const std::int32_t token : tokens) {
      ConstraintState next;
      if (token == c.eos_id) {
        if (state.remaining > 0) continue;
        next = state;
      } else {
        next = advance(state, constraints, token);
        if (t + 1 + next.remaining > s.max_length) continue;
      }
      const double value = log_prob(values, row, token);
      all.push_back({s.log_probs[static_cast<std::size_t>(k)] + value, k, token, value,
                     static_cast<std::int64_t>(all_states.size())});
      all_states.push_back(std::move(next));
    }
  }
  std::sort(all.begin(), all.end(), [](const Candidate& x, const Candidate& y) {
    if (x.log_prob != y.log_prob) return x.log_prob > y.log_prob;
    if (x.beam != y.beam) return x.beam < y.beam;
    return x.token < y.token;
  });
  const std::int64_t total = s.guide.constraint_tokens();
  const auto banks_of = [&](const std::vector<std::size_t>& at) {
    std::vector<std::int64_t> banks;
    for (const std::size_t i : at)
      banks.push_back(total - all_states[static_cast<std::size_t>(all[i].state)].remaining);
    return banks;
  };
  std::vector<std::size_t> everything(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) everything[i] = i;
  std::vector<std::uint8_t> taken(all.size(), 0);
  std::int64_t finishing = 0;
  for (const std::size_t j : allocate_banks(banks_of(everything), total, k_max)) {
    taken[j] = 1;
    if (all[j].token == c.eos_id) ++finishing;
  }
  std::vector<std::size_t> rest;  // not taken, not EOS: for the rows that finishing ones free
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (taken[i] == 0 && all[i].token != c.eos_id) rest.push_back(i);
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (taken[i] != 0) order.push_back(i);
  }
  for (const std::size_t r : allocate_banks(banks_of(rest), total, finishing)) order.push_back(rest[r]);
  candidates.clear();
  states.clear();
  for (const std::size_t i : order) {
    candidates.push_back(all[i]);
    candidates.back().state = static_cast<std::int64_t>(states.size());
    states.push_back(std::move(all_states[static_cast<std::size_t>(all[i].state)]));
  }
}

}  // namespace dragoman::decode
