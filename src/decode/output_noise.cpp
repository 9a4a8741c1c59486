// Noised translations for back-translation (see output_noise.h).
#include "decode/output_noise.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "base/philox.h"

namespace dragoman::decode {
namespace {

// Uniform in [0, 1) (53 bits): draw `what` (0 shuffle, 1 delete, 2 blank) of word `word` of
// hypothesis `rank`.
double noise_uniform(std::uint64_t seed, std::uint64_t key, std::int64_t rank, std::int64_t word, int what) {
  const std::uint64_t stream = philox::purpose_stream(philox::Purpose::kNoise, key);
  const std::uint64_t index = (static_cast<std::uint64_t>(rank) << 40) | (static_cast<std::uint64_t>(word) << 4) |
                              (static_cast<std::uint64_t>(what) << 2);
  const philox::Block b = philox::block_bits(seed, stream, index >> 2);
  const std::uint64_t bits53 = ((static_cast<std::uint64_t>(b.v[0]) << 32) | b.v[1]) >> 11;
  return static_cast<double>(bits53) * (1.0 / 9007199254740992.0);  // / 2^53
}

}  // namespace

std::string add_noise(std::string_view text, const NoiseOptions& o, std::uint64_t key, std::int64_t rank) {
  std::vector<std::string_view> words;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t start = text.find_first_not_of(' ', at);
    if (start == std::string_view::npos) break;
    const std::size_t end = std::min(text.find(' ', start), text.size());
    words.push_back(text.substr(start, end - start));
    at = end;
  }
  // The shuffle: position + U[0, distance), sorted (ties keep the order).
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const auto w = static_cast<std::int64_t>(i);
    order.emplace_back(static_cast<double>(i) + o.shuffle_distance * noise_uniform(o.seed, key, rank, w, 0), i);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (std::size_t j = 0; j < order.size(); ++j) {
    const auto w = static_cast<std::int64_t>(j);  // the draws of the word now at place j
    if (noise_uniform(o.seed, key, rank, w, 1) < o.delete_probability) continue;
    if (!out.empty()) out += ' ';
    if (noise_uniform(o.seed, key, rank, w, 2) < o.blank_probability) {
      out += o.blank;
    } else {
      out += words[order[j].second];
    }
  }
  return out;
}

}  // namespace dragoman::decode
