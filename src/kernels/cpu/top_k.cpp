// The k best entries of a row (see top_k.h).
#include "kernels/top_k.h"

#include <algorithm>
#include <iterator>
#include <type_traits>

#include "kernels/cpu/vector_math.h"

namespace dragoman::cpu {

namespace {

// Puts (value, id) into the sorted list `best` of at most `count` entries, where it belongs: behind
// every entry it does not beat (ids come in ascending order, so equal values keep id order).
void insert(std::vector<std::pair<double, std::int32_t>>& best, std::size_t count, double value, std::int32_t id) {
  if (best.size() == count) best.pop_back();
  auto at = best.end();
  while (at != best.begin() && value > std::prev(at)->first) --at;
  best.insert(at, {value, id});
}

}  // namespace

template <typename T>
void top_k_row(const T* row, std::int64_t v, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
               std::vector<std::pair<double, std::int32_t>>& best) {
  best.clear();
  const auto count = static_cast<std::size_t>(k);
  if (count == 0) return;
  // A small sorted list, filled by the first `count` entries; after that only an entry above its
  // worst one gets in, and a vectorised scan (f32) finds the next such entry: most of a row's
  // entries are passed over in registers, 64 at a time.
  std::int64_t id = 0;
  for (; id < v && best.size() < count; ++id) {
    if (id != skip_a && id != skip_b) insert(best, count, static_cast<double>(row[id]), static_cast<std::int32_t>(id));
  }
  while (id < v) {
    const double worst = best.back().first;
    if constexpr (std::is_same_v<T, float>) {
      id += first_above_f32(row + id, v - id, static_cast<float>(worst));  // worst is a float's value
      if (id == v) break;
    }
    const double value = static_cast<double>(row[id]);
    if (value > worst && id != skip_a && id != skip_b) insert(best, count, value, static_cast<std::int32_t>(id));
    ++id;
  }
}

template void top_k_row<float>(const float*, std::int64_t, std::int64_t, std::int32_t, std::int32_t,
                               std::vector<std::pair<double, std::int32_t>>&);
template void top_k_row<double>(const double*, std::int64_t, std::int64_t, std::int32_t, std::int32_t,
                                std::vector<std::pair<double, std::int32_t>>&);

}  // namespace dragoman::cpu
