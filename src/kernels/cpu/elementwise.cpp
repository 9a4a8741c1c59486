// Element-wise CPU kernels (see elementwise.h for the rounding points).
#include "kernels/elementwise.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "base/philox.h"
#include "kernels/common/activation.h"
#include "kernels/common/dropout.h"
#include "kernels/cpu/vector_math.h"

namespace dragoman::cpu {

template <typename T>
void add(const T* a, const T* b, T* y, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) y[i] = store<T>(load(a[i]) + load(b[i]));
}

template <typename T>
void accumulate(T* y, const T* x, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) y[i] = store<T>(load(y[i]) + load(x[i]));
}

template <typename T>
void scale(T* y, acc_t<T> s, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) y[i] = store<T>(load(y[i]) * s);
}

template <typename T>
void relu_forward(const T* x, T* y, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) y[i] = load(x[i]) > 0 ? x[i] : T();
}

template <typename T>
void relu_backward(const T* y, const T* dy, T* dx, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const T g = dy[i];  // read whatever y says: a conditional read kept GCC from vectorising the select
    dx[i] = load(y[i]) > 0 ? g : T();
  }
}

template <typename T>
void swish_forward(const T* x, T* y, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    // f32 (decoding's hot case): the vectorised swish_approx, in blocks (the same bits for any thread count).
    constexpr std::int64_t kBlock = 4096;
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < n; b += kBlock) swish_f32(x + b, std::min(kBlock, n - b), y + b);
  } else {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) y[i] = common::swish_element(x[i]);
  }
}

template <typename T>
void swish_backward(const T* x, const T* dy, T* dx, std::int64_t n) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = common::swish_backward_element(x[i], dy[i]);
}

template <typename T>
void bias_add(T* y, const T* b, std::int64_t rows, std::int64_t cols) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = y + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) row[c] = store<T>(load(row[c]) + load(b[c]));
  }
}

template <typename T>
void bias_backward(const T* dy, acc_t<T>* db, std::int64_t rows, std::int64_t cols) {
  // Columns in blocks of 64 across threads; each column's rows summed in order.
  constexpr std::int64_t kBlock = 64;
  const std::int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t c0 = blk * kBlock, c1 = std::min(cols, c0 + kBlock);
    acc_t<T> sum[kBlock] = {};
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* row = dy + r * cols;
      for (std::int64_t c = c0; c < c1; ++c) sum[c - c0] += load(row[c]);
    }
    for (std::int64_t c = c0; c < c1; ++c) db[c] += sum[c - c0];
  }
}

namespace {

// element(i, bits, threshold, keep_scale) for i < n, where bits are element i's 32 random bits
// (philox::uniform(seed, rng_stream, i)): dropout's blocks of 4, spread over the OpenMP threads.
template <typename T, typename Element>
void for_each_dropout_element(std::int64_t n, double p, std::uint64_t seed, std::uint64_t rng_stream, Element element) {
  const acc_t<T> keep_scale = static_cast<acc_t<T>>(1.0 / (1.0 - p));
  const float threshold = static_cast<float>(p);
  const std::int64_t blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const philox::Block r = philox::block_bits(seed, rng_stream, static_cast<std::uint64_t>(b));
    for (std::int64_t j = 0; j < 4 && 4 * b + j < n; ++j) element(4 * b + j, r.v[j], threshold, keep_scale);
  }
}

}  // namespace

template <typename T>
void dropout(const T* x, T* y, std::int64_t n, double p, std::uint64_t seed, std::uint64_t rng_stream) {
  for_each_dropout_element<T>(n, p, seed, rng_stream,
                              [x, y](std::int64_t i, std::uint32_t bits, float threshold, acc_t<T> keep_scale) {
                                y[i] = common::dropout_element(x[i], bits, threshold, keep_scale);
                              });
}

template <typename T>
void dropout_add(const T* x, const T* y, T* out, std::int64_t n, double p, std::uint64_t seed,
                 std::uint64_t rng_stream) {
  for_each_dropout_element<T>(n, p, seed, rng_stream,
                              [x, y, out](std::int64_t i, std::uint32_t bits, float threshold, acc_t<T> keep_scale) {
                                out[i] = common::dropout_add_element(x[i], y[i], bits, threshold, keep_scale);
                              });
}

template <typename T>
double sum_squares(const T* x, std::int64_t n) {
  constexpr std::int64_t kBlock = 1 << 16;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<std::size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    double s = 0;
    const std::int64_t end = std::min(n, (blk + 1) * kBlock);
    if constexpr (std::is_same_v<T, float>) {
      s = sum_squares_f32(x + blk * kBlock, end - blk * kBlock);  // in 16 lanes (vector_math.h)
    } else {
      for (std::int64_t i = blk * kBlock; i < end; ++i) {
        const double v = load(x[i]);
        s += v * v;
      }
    }
    partial[static_cast<std::size_t>(blk)] = s;
  }
  double total = 0;
  for (const double s : partial) total += s;
  return total;
}

#define DRAGOMAN_INSTANTIATE(T)                                                                             \
  template void add<T>(const T*, const T*, T*, std::int64_t);                                               \
  template void accumulate<T>(T*, const T*, std::int64_t);                                                  \
  template void scale<T>(T*, acc_t<T>, std::int64_t);                                                       \
  template void relu_forward<T>(const T*, T*, std::int64_t);                                                \
  template void relu_backward<T>(const T*, const T*, T*, std::int64_t);                                     \
  template void swish_forward<T>(const T*, T*, std::int64_t);                                               \
  template void swish_backward<T>(const T*, const T*, T*, std::int64_t);                                    \
  template void bias_add<T>(T*, const T*, std::int64_t, std::int64_t);                                      \
  template void bias_backward<T>(const T*, acc_t<T>*, std::int64_t, std::int64_t);                          \
  template void dropout<T>(const T*, T*, std::int64_t, double, std::uint64_t, std::uint64_t);               \
  template void dropout_add<T>(const T*, const T*, T*, std::int64_t, double, std::uint64_t, std::uint64_t); \
  template double sum_squares<T>(const T*, std::int64_t);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cpu
