// The k best entries of a row (see top_k.h).
#include "kernels/top_k.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <type_traits>

#include "kernels/cpu/vector_math.h"

namespace dragoman::cpu {

template <typename T>
void top_k_row(const T* row, std::int64_t v, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
               std::vector<std::pair<double, std::int32_t>>& best) {
  best.clear();
  const auto count = static_cast<std::size_t>(k);
  if (count == 0) return;
  // A small sorted list; most entries fail the first comparison against its worst one. Ids come in
  // ascending order and only a strictly larger value moves ahead, so equal values keep id order.
  // Once the list is full, a block of entries whose maximum is not above its worst one is skipped
  // whole (a vectorised max for f32): the same picks, for a fraction of the comparisons.
  constexpr std::int64_t kBlock = 64;
  for (std::int64_t start = 0; start < v; start += kBlock) {
    const std::int64_t end = std::min(v, start + kBlock);
    if (best.size() == count) {
      double block_max;
      if constexpr (std::is_same_v<T, float>) {
        block_max = static_cast<double>(max_f32(row + start, end - start));
      } else {
        block_max = -std::numeric_limits<double>::infinity();
        for (std::int64_t i = start; i < end; ++i) block_max = row[i] > block_max ? row[i] : block_max;
      }
      if (!(block_max > best.back().first)) continue;
    }
    for (auto id = static_cast<std::int32_t>(start); id < static_cast<std::int32_t>(end); ++id) {
      if (id == skip_a || id == skip_b) continue;
      const double value = static_cast<double>(row[id]);
      if (best.size() == count && !(value > best.back().first)) continue;
      if (best.size() == count) best.pop_back();
      auto at = best.end();
      while (at != best.begin() && value > std::prev(at)->first) --at;
      best.insert(at, {value, id});
    }
  }
}

template void top_k_row<float>(const float*, std::int64_t, std::int64_t, std::int32_t, std::int32_t,
                               std::vector<std::pair<double, std::int32_t>>&);
template void top_k_row<double>(const double*, std::int64_t, std::int64_t, std::int32_t, std::int32_t,
                                std::vector<std::pair<double, std::int32_t>>&);

}  // namespace dragoman::cpu
