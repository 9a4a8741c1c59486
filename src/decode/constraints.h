// What a search is told about a sentence's output besides its source (docs/DECODING.md, "Target
// prefixes" and "Lexical constraints"): a prefix forced as the output's first tokens, and phrases
// the output must contain. Constrained search is Post & Vilar 2018's dynamic beam allocation (DBA,
// as fairseq and Sockeye have it), with a guarantee they lack: every hypothesis keeps room for the
// constraint tokens it still owes, so every output contains every constraint.
//
// A hypothesis's progress is a ConstraintState: which constraints it has produced, and the tail of
// its output that is a proper prefix of one still owed (the longest such tail, so that "a a b"
// meets "a b" and "a c" after "a" meets "a c" of ["a b", "a c"]). Each constraint is produced as a
// span of its own: two constraints may share tokens in their text but not in the output ("a b"
// and "b c" are met by "a b b c", not by "a b c").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dragoman::decode {

// One sentence's guidance; empty: an ordinary search.
struct TargetGuide {
  std::vector<std::int32_t> prefix;                    // target ids forced as the output's first tokens
  std::vector<std::vector<std::int32_t>> constraints;  // target id phrases, each non-empty

  bool empty() const { return prefix.empty() && constraints.empty(); }
  // The constraints' tokens together.
  std::int64_t constraint_tokens() const;
};

struct ConstraintState {
  std::vector<std::uint8_t> met;      // per constraint: produced
  std::vector<std::int32_t> partial;  // the output's tail: a proper prefix of constraint `current`
  int current = -1;                   // -1: none in progress
  std::int64_t remaining = 0;         // constraint tokens still owed: unmet lengths - partial's
};

// The state of an empty output.
ConstraintState start_constraints(const std::vector<std::vector<std::int32_t>>& constraints);

// The state after `token` (not EOS) follows an output in `state`.
ConstraintState advance(const ConstraintState& state, const std::vector<std::vector<std::int32_t>>& constraints,
                        std::int32_t token);

// The tokens that make progress from `state` (appended to `out`): the next token of the constraint
// in progress, and the first token of every constraint not met.
void advancing_tokens(const ConstraintState& state, const std::vector<std::vector<std::int32_t>>& constraints,
                      std::vector<std::int32_t>& out);

// Dynamic beam allocation: of candidates in rank order (best first), each in the bank of the
// constraint tokens it has met (`banks[i]` in [0, total]), chooses at most `slots`: each bank is
// given slots / (total + 1) of them, the remainder going to the fullest banks; the slots a bank
// cannot fill go round the banks, fullest first, to each bank's best candidate left (so that
// hypotheses making progress are not pruned by the plain ranking). Returns the chosen positions,
// in rank order.
std::vector<std::size_t> allocate_banks(const std::vector<std::int64_t>& banks, std::int64_t total, std::int64_t slots);

}  // namespace dragoman::decode
