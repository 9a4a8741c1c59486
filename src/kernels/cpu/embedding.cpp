// Token embeddings and positions (see embedding.h).
#include "kernels/cpu/embedding.h"

#include <algorithm>
#include <cmath>

namespace dragoman::cpu {

template <typename T>
void embedding_forward(const std::int32_t* ids, const T* table, const T* positions, T* out, std::int64_t rows,
                       std::int64_t length, std::int64_t position_offset, std::int64_t d, double scale) {
  const T s = static_cast<T>(scale);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* e = table + static_cast<std::int64_t>(ids[r]) * d;
    T* o = out + r * d;
    if (positions != nullptr) {
      const T* p = positions + (position_offset + r % length) * d;
      for (std::int64_t i = 0; i < d; ++i) o[i] = s * e[i] + p[i];
    } else {
      for (std::int64_t i = 0; i < d; ++i) o[i] = s * e[i];
    }
  }
}

template <typename T>
void embedding_backward(const std::int32_t* ids, const T* dout, T* dtable, T* dpositions, std::int64_t rows,
                        std::int64_t length, std::int64_t position_offset, std::int64_t d, double scale) {
  const T s = static_cast<T>(scale);
  // Columns in blocks across threads; within a block, rows in order.
  constexpr std::int64_t kBlock = 32;
  const std::int64_t blocks = (d + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t c0 = blk * kBlock, c1 = std::min(d, c0 + kBlock);
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* g = dout + r * d;
      T* e = dtable + static_cast<std::int64_t>(ids[r]) * d;
      for (std::int64_t c = c0; c < c1; ++c) e[c] += s * g[c];
      if (dpositions != nullptr) {
        T* p = dpositions + (position_offset + r % length) * d;
        for (std::int64_t c = c0; c < c1; ++c) p[c] += g[c];
      }
    }
  }
}

template <typename T>
void sinusoidal_positions(T* out, std::int64_t positions, std::int64_t d) {
  for (std::int64_t t = 0; t < positions; ++t) {
    for (std::int64_t i = 0; 2 * i < d; ++i) {
      const double angle = static_cast<double>(t) / std::pow(10000.0, static_cast<double>(2 * i) / static_cast<double>(d));
      out[t * d + 2 * i] = static_cast<T>(std::sin(angle));
      if (2 * i + 1 < d) out[t * d + 2 * i + 1] = static_cast<T>(std::cos(angle));
    }
  }
}

template void embedding_forward<float>(const std::int32_t*, const float*, const float*, float*, std::int64_t,
                                       std::int64_t, std::int64_t, std::int64_t, double);
template void embedding_forward<double>(const std::int32_t*, const double*, const double*, double*, std::int64_t,
                                        std::int64_t, std::int64_t, std::int64_t, double);
template void embedding_backward<float>(const std::int32_t*, const float*, float*, float*, std::int64_t,
                                        std::int64_t, std::int64_t, std::int64_t, double);
template void embedding_backward<double>(const std::int32_t*, const double*, double*, double*, std::int64_t,
                                         std::int64_t, std::int64_t, std::int64_t, double);
template void sinusoidal_positions<float>(float*, std::int64_t, std::int64_t);
template void sinusoidal_positions<double>(double*, std::int64_t, std::int64_t);

}  // namespace dragoman::cpu
