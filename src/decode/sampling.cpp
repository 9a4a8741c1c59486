// Sampled decoding's draws (see sampling.h).
#include "decode/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/hash.h"
#include "base/philox.h"

namespace dragoman::decode {

std::uint64_t sampling_key(const std::vector<std::int32_t>& source) {
  ContentHash h;
  h.add(std::string_view(reinterpret_cast<const char*>(source.data()), source.size() * sizeof(std::int32_t)));
  return h.value();
}

double sampling_uniform(std::uint64_t seed, std::uint64_t key, std::int64_t sample, std::int64_t step) {
  const std::uint64_t stream = philox::purpose_stream(philox::Purpose::kSample, key);
  // Two 32-bit words per draw; the sample's number in the high bits of the index.
  const std::uint64_t index = (static_cast<std::uint64_t>(sample) << 40) | (static_cast<std::uint64_t>(step) << 1);
  const philox::Block b = philox::block_bits(seed, stream, index >> 2);  // index is even: words 0-1 or 2-3
  const std::uint32_t hi = b.v[index & 3], lo = b.v[(index & 3) + 1];
  const std::uint64_t bits53 = ((static_cast<std::uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(bits53) * (1.0 / 9007199254740992.0);  // / 2^53
}

void check_sampling_options(const SamplingOptions& o) {
  if (!(o.temperature > 0) || !std::isfinite(o.temperature)) throw Error("sampling: the temperature must be > 0");
  if (!(o.top_p > 0 && o.top_p <= 1)) throw Error("sampling: top-p must be in (0, 1]");
  if (o.top_k < 0) throw Error("sampling: top-k must be >= 0");
}

template <typename T>
std::vector<std::pair<std::int32_t, double>> sampling_distribution(const T* log_probs, std::int64_t vocab,
                                                                   const SamplingOptions& o,
                                                                   const std::vector<std::int32_t>& excluded) {
  std::vector<std::pair<std::int32_t, double>> kept;
  sampling_distribution(log_probs, vocab, o, excluded, kept);
  return kept;
}

template <typename T>
void sampling_distribution(const T* log_probs, std::int64_t vocab, const SamplingOptions& o,
                           const std::vector<std::int32_t>& excluded,
                           std::vector<std::pair<std::int32_t, double>>& kept) {
  check_sampling_options(o);
  kept.clear();  // (token, tempered log-probability)
  kept.reserve(static_cast<std::size_t>(vocab));
  for (std::int64_t v = 0; v < vocab; ++v) {
    const auto token = static_cast<std::int32_t>(v);
    if (std::find(excluded.begin(), excluded.end(), token) != excluded.end()) continue;
    const double x = static_cast<double>(log_probs[v]);
    if (x == -std::numeric_limits<double>::infinity()) continue;  // probability 0
    kept.emplace_back(token, x / o.temperature);
  }
  if (kept.empty()) throw Error("sampling: no token has a probability above 0");
  const auto before = [](const std::pair<std::int32_t, double>& a, const std::pair<std::int32_t, double>& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  bool sorted = false;
  if (o.top_k > 0 && static_cast<std::size_t>(o.top_k) < kept.size()) {
    std::partial_sort(kept.begin(), kept.begin() + o.top_k, kept.end(), before);
    kept.resize(static_cast<std::size_t>(o.top_k));
    sorted = true;
  }
  // The softmax of what is kept (its terms summed in the order kept).
  double top = kept.front().second;
  for (const auto& [token, x] : kept) top = std::max(top, x);
  double sum = 0;
  for (auto& [token, x] : kept) sum += (x = std::exp(x - top));
  for (auto& [token, p] : kept) p /= sum;
  if (o.top_p < 1) {  // the smallest most probable set whose probability reaches p
    // Sorted as far as needed: the 64 most probable, then twice as many, until they reach p (the
    // nucleus is short; sorting the whole vocabulary at every step cost 5x the decoding).
    std::size_t m = kept.size();
    if (!sorted) {
      for (m = std::min<std::size_t>(64, kept.size());; m = std::min(2 * m, kept.size())) {
        // The m most probable at the front (in linear time), then those alone sorted.
        if (m < kept.size()) {
          std::nth_element(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(m), kept.end(), before);
        }
        double head = 0;
        for (std::size_t i = 0; i < m; ++i) head += kept[i].second;
        if (head >= o.top_p || m == kept.size()) break;
      }
      std::sort(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(m), before);
    }
    double cumulative = 0;
    std::size_t n = 0;
    while (n < m && cumulative < o.top_p) cumulative += kept[n++].second;
    kept.resize(n);
    for (auto& [token, p] : kept) p /= cumulative;
  }
}

template std::vector<std::pair<std::int32_t, double>> sampling_distribution(const float*, std::int64_t,
                                                                            const SamplingOptions&,
                                                                            const std::vector<std::int32_t>&);
template std::vector<std::pair<std::int32_t, double>> sampling_distribution(const double*, std::int64_t,
                                                                            const SamplingOptions&,
                                                                            const std::vector<std::int32_t>&);
template void sampling_distribution(const float*, std::int64_t, const SamplingOptions&,
                                    const std::vector<std::int32_t>&, std::vector<std::pair<std::int32_t, double>>&);
template void sampling_distribution(const double*, std::int64_t, const SamplingOptions&,
                                    const std::vector<std::int32_t>&, std::vector<std::pair<std::int32_t, double>>&);

std::int32_t pick_token(const std::vector<std::pair<std::int32_t, double>>& distribution, double u) {
  double cumulative = 0;
  for (const auto& [token, p] : distribution) {
    cumulative += p;
    if (u < cumulative) return token;
  }
  return distribution.back().first;  // u within rounding of 1
}

}  // namespace dragoman::decode
