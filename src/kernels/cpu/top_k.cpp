// The k best entries of a row (see top_k.h).
#include "kernels/cpu/top_k.h"

#include <iterator>

namespace dragoman::cpu {

template <typename T>
void top_k_row(const T* row, std::int64_t v, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
               std::vector<std::pair<double, std::int32_t>>& best) {
  best.clear();
  const auto count = static_cast<std::size_t>(k);
  // A small sorted list; most entries fail the first comparison against its worst one. Ids come in
  // ascending order and only a strictly larger value moves ahead, so equal values keep id order.
  for (std::int32_t id = 0; id < static_cast<std::int32_t>(v); ++id) {
    if (id == skip_a || id == skip_b) continue;
    const double value = static_cast<double>(row[id]);
    if (best.size() == count && !(value > best.back().first)) continue;
    if (best.size() == count) best.pop_back();
    auto at = best.end();
    while (at != best.begin() && value > std::prev(at)->first) --at;
    best.insert(at, {value, id});
  }
}

template void top_k_row<float>(const float*, std::int64_t, std::int64_t, std::int32_t, std::int32_t,
                               std::vector<std::pair<double, std::int32_t>>&);
template void top_k_row<double>(const double*, std::int64_t, std::int64_t, std::int32_t, std::int32_t,
                                std::vector<std::pair<double, std::int32_t>>&);

}  // namespace dragoman::cpu
