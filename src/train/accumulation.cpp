#include "train/accumulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace dragoman::train {

namespace {

std::string thousands(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

Accumulation resolve_accumulation(const TrainingConfig& t, std::int64_t workers) {
  if (workers < 1) throw Error("resolve_accumulation: no workers");
  Accumulation a;
  if (t.tokens_per_update <= 0) {
    a.update_freq = std::max<std::int64_t>(1, t.update_freq);
  } else {
    a.derived = true;
    const double per_round = static_cast<double>(workers) * static_cast<double>(t.max_tokens);
    a.update_freq = std::max<std::int64_t>(1, std::llround(static_cast<double>(t.tokens_per_update) / per_round));
  }
  a.batches = a.update_freq * workers;
  a.tokens = a.batches * t.max_tokens;
  if (!a.derived) return a;
  const double miss =
      std::abs(static_cast<double>(a.tokens - t.tokens_per_update)) / static_cast<double>(t.tokens_per_update);
  if (miss > kTokensPerUpdateMargin) {
    // The max_tokens that meet it on these workers: with the derived update_freq, or one more.
    std::string options;
    for (const std::int64_t k : {a.update_freq, a.update_freq + 1}) {
      const std::int64_t m = std::max<std::int64_t>(
          1, std::llround(static_cast<double>(t.tokens_per_update) / static_cast<double>(workers * k)));
      if (!options.empty()) options += " or ";
      options += fmt::format("{} (update_freq {}: {} tokens)", m, k, thousands(m * k * workers));
    }
    throw Error(fmt::format(
        "training.tokens_per_update {} cannot be met with training.max_tokens {} on {} worker{}: the nearest is "
        "update_freq {}, {} tokens per update ({:+.0f} %, more than the {:.0f} % allowed); set training.max_tokens "
        "to {}, or training.tokens_per_update to the batch you want",
        thousands(t.tokens_per_update), thousands(t.max_tokens), workers, workers == 1 ? "" : "s", a.update_freq,
        thousands(a.tokens),
        100.0 * static_cast<double>(a.tokens - t.tokens_per_update) / static_cast<double>(t.tokens_per_update),
        100 * kTokensPerUpdateMargin, options));
  }
  return a;
}

std::string describe(const Accumulation& a, const TrainingConfig& t, std::int64_t workers) {
  return fmt::format(
      "{} tokens per update{}: {} batch{} of at most {} tokens ({} worker{} x update_freq {})", thousands(a.tokens),
      a.derived ? fmt::format(" (training.tokens_per_update {})", thousands(t.tokens_per_update)) : std::string(),
      a.batches, a.batches == 1 ? "" : "es", thousands(t.max_tokens), workers, workers == 1 ? "" : "s", a.update_freq);
}

}  // namespace dragoman::train
