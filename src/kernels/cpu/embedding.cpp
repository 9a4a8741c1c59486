// Token embeddings and positions (see embedding.h for the rounding points).
#include "kernels/embedding.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/cast.h"

namespace dragoman::cpu {

template <typename T>
void embedding_forward(const std::int32_t* ids, const T* table, const T* positions, T* out, std::int64_t rows,
                       std::int64_t length, std::int64_t position_offset, std::int64_t d, double scale) {
  const acc_t<T> s = static_cast<acc_t<T>>(scale);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* e = table + static_cast<std::int64_t>(ids[r]) * d;
    T* o = out + r * d;
    if (positions != nullptr) {
      const T* p = positions + (position_offset + r % length) * d;
      for (std::int64_t i = 0; i < d; ++i) o[i] = store<T>(s * load(e[i]) + load(p[i]));
    } else {
      for (std::int64_t i = 0; i < d; ++i) o[i] = store<T>(s * load(e[i]));
    }
  }
}

template <typename T>
void embedding_backward(const std::int32_t* ids, const T* dout, acc_t<T>* dtable, acc_t<T>* dpositions,
                        std::int64_t rows, std::int64_t length, std::int64_t position_offset, std::int64_t d,
                        double scale, std::int32_t padding_id) {
  using A = acc_t<T>;
  const A s = static_cast<A>(scale);
  // Columns in blocks across threads; within a block, rows in order.
  constexpr std::int64_t kBlock = 32;
  const std::int64_t blocks = (d + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t c0 = blk * kBlock, c1 = std::min(d, c0 + kBlock);
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* g = dout + r * d;
      if (ids[r] != padding_id) {
        A* e = dtable + static_cast<std::int64_t>(ids[r]) * d;
        for (std::int64_t c = c0; c < c1; ++c) e[c] += s * load(g[c]);
      }
      if (dpositions != nullptr) {
        A* p = dpositions + (position_offset + r % length) * d;
        for (std::int64_t c = c0; c < c1; ++c) p[c] += load(g[c]);
      }
    }
  }
}

template <typename T>
void sinusoidal_positions(T* out, std::int64_t positions, std::int64_t d, int layout) {
  const std::int64_t half = d / 2;
  const bool interleaved = layout == 0, t2t = layout == 2;
  for (std::int64_t t = 0; t < positions; ++t) {
    for (std::int64_t i = 0; i < half; ++i) {
      const double exponent = t2t ? static_cast<double>(i) / static_cast<double>(half - 1)
                                  : static_cast<double>(2 * i) / static_cast<double>(d);
      const double angle = static_cast<double>(t) / std::pow(10000.0, exponent);
      out[t * d + (interleaved ? 2 * i : i)] = round_once<T>(std::sin(angle));
      out[t * d + (interleaved ? 2 * i + 1 : half + i)] = round_once<T>(std::cos(angle));
    }
  }
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                        \
  template void embedding_forward<T>(const std::int32_t*, const T*, const T*, T*, std::int64_t, std::int64_t,          \
                                     std::int64_t, std::int64_t, double);                                              \
  template void embedding_backward<T>(const std::int32_t*, const T*, acc_t<T>*, acc_t<T>*, std::int64_t, std::int64_t, \
                                      std::int64_t, std::int64_t, double, std::int32_t);                               \
  template void sinusoidal_positions<T>(T*, std::int64_t, std::int64_t, int);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cpu
