// Constraint progress and dynamic beam allocation (see constraints.h).
#include "decode/constraints.h"

#include <algorithm>

namespace dragoman::decode {
namespace {

std::int64_t owed(const ConstraintState& state, const std::vector<std::vector<std::int32_t>>& constraints) {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < constraints.size(); ++i) {
    if (state.met[i] == 0) total += static_cast<std::int64_t>(constraints[i].size());
  }
  return total - static_cast<std::int64_t>(state.partial.size());
}

bool starts_with(const std::vector<std::int32_t>& phrase, const std::int32_t* tokens, std::size_t count) {
  return phrase.size() >= count && std::equal(tokens, tokens + count, phrase.begin());
}

}  // namespace

std::int64_t TargetGuide::constraint_tokens() const {
  std::int64_t total = 0;
  for (const std::vector<std::int32_t>& c : constraints) total += static_cast<std::int64_t>(c.size());
  return total;
}

ConstraintState start_constraints(const std::vector<std::vector<std::int32_t>>& constraints) {
  ConstraintState state;
  state.met.assign(constraints.size(), 0);
  state.remaining = owed(state, constraints);
  return state;
}

ConstraintState advance(const ConstraintState& state, const std::vector<std::vector<std::int32_t>>& constraints,
                        std::int32_t token) {
  ConstraintState next = state;
  std::vector<std::int32_t> tail = state.partial;
  tail.push_back(token);
  next.partial.clear();
  next.current = -1;
  // The longest tail of the output that begins a constraint still owed: the one in progress first
  // (its continuation always counts for it), then the others in order.
  for (std::size_t start = 0; start < tail.size(); ++start) {
    const std::int32_t* suffix = tail.data() + start;
    const std::size_t length = tail.size() - start;
    int found = -1;
    if (state.current >= 0 && starts_with(constraints[static_cast<std::size_t>(state.current)], suffix, length)) {
      found = state.current;
    }
    for (std::size_t i = 0; found < 0 && i < constraints.size(); ++i) {
      if (state.met[i] == 0 && starts_with(constraints[i], suffix, length)) found = static_cast<int>(i);
    }
    if (found < 0) continue;
    if (constraints[static_cast<std::size_t>(found)].size() == length) {
      next.met[static_cast<std::size_t>(found)] = 1;  // produced: nothing in progress
    } else {
      next.partial.assign(suffix, suffix + length);
      next.current = found;
    }
    break;
  }
  next.remaining = owed(next, constraints);
  return next;
}

void advancing_tokens(const ConstraintState& state, const std::vector<std::vector<std::int32_t>>& constraints,
                      std::vector<std::int32_t>& out) {
  if (state.current >= 0) out.push_back(constraints[static_cast<std::size_t>(state.current)][state.partial.size()]);
  for (std::size_t i = 0; i < constraints.size(); ++i) {
    if (state.met[i] == 0) out.push_back(constraints[i].front());
  }
}

std::vector<std::size_t> allocate_banks(const std::vector<std::int64_t>& banks, std::int64_t total,
                                        std::int64_t slots) {
  const std::int64_t count = total + 1;
  std::vector<std::int64_t> quota(static_cast<std::size_t>(count), slots / count);
  for (std::int64_t b = count - slots % count; b < count; ++b) ++quota[static_cast<std::size_t>(b)];
  std::vector<std::uint8_t> chosen(banks.size(), 0);
  std::int64_t taken = 0;
  for (std::size_t i = 0; i < banks.size() && taken < slots; ++i) {
    std::int64_t& left = quota[static_cast<std::size_t>(std::clamp<std::int64_t>(banks[i], 0, total))];
    if (left > 0) {
      --left;
      chosen[i] = 1;
      ++taken;
    }
  }
  // The slots a bank could not fill: one to each bank's best candidate left, round by round, the
  // fullest banks first (progress is what the plain ranking would prune).
  std::vector<std::vector<std::size_t>> left(static_cast<std::size_t>(count));
  for (std::size_t i = banks.size(); i-- > 0;) {
    if (chosen[i] == 0) left[static_cast<std::size_t>(std::clamp<std::int64_t>(banks[i], 0, total))].push_back(i);
  }
  for (bool any = true; any && taken < slots;) {
    any = false;
    for (std::int64_t b = total; b >= 0 && taken < slots; --b) {
      std::vector<std::size_t>& bank = left[static_cast<std::size_t>(b)];  // best last
      if (bank.empty()) continue;
      chosen[bank.back()] = 1;
      bank.pop_back();
      ++taken;
      any = true;
    }
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < banks.size(); ++i) {
    if (chosen[i] != 0) order.push_back(i);
  }
  return order;
}

}  // namespace dragoman::decode
