// The number of updates that fits a time budget (see budget.h).
#include "train/budget.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace dragoman::train {

double budget_seconds_at(const BudgetInputs& in, std::int64_t total) {
  const std::int64_t updates = total - in.step;
  double seconds = in.elapsed_seconds + static_cast<double>(updates) * in.update_seconds;
  if (in.valid_every > 0) {
    seconds += static_cast<double>(total / in.valid_every - in.step / in.valid_every) * in.validation_seconds;
  }
  // Checkpoints at total - k * every > step, k = 0, 1, ...: the last one always.
  std::int64_t checkpoints = 1;
  if (in.checkpoint_every > 0) checkpoints = (updates - 1) / in.checkpoint_every + 1;
  if (in.checkpoint_every_minutes > 0) {
    checkpoints += static_cast<std::int64_t>(static_cast<double>(updates) * in.update_seconds /
                                             (in.checkpoint_every_minutes * 60.0));
  }
  return seconds + static_cast<double>(checkpoints) * in.checkpoint_seconds;
}

std::int64_t updates_that_fit(const BudgetInputs& in) {
  if (!(in.update_seconds > 0) || !std::isfinite(in.update_seconds)) {
    throw Error("updates_that_fit: the measured seconds per update must be > 0");
  }
  const double limit = in.budget_seconds * (1.0 - in.reserve);
  // budget_seconds_at grows with total: the largest total within the limit, by bisection.
  std::int64_t low = in.step;  // fits (nothing more to do)
  std::int64_t high = in.step + static_cast<std::int64_t>(std::ceil(in.budget_seconds / in.update_seconds)) + 2;
  if (in.max_steps > 0) high = std::min(high, std::max(in.max_steps, in.step) + 1);
  while (high - low > 1) {
    const std::int64_t mid = low + (high - low) / 2;
    if (budget_seconds_at(in, mid) <= limit) {
      low = mid;
    } else {
      high = mid;
    }
  }
  if (in.max_steps > 0) low = std::min(low, std::max(in.max_steps, in.step));
  return low;
}

}  // namespace dragoman::train
