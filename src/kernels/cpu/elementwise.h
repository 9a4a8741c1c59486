// Element-wise CPU kernels: the spec for their CUDA twins. T is float or double. Row-parallel
// kernels give the same bits for any thread count; reductions over rows run sequentially per
// column, so they do too.
//
// Backward convention (as everywhere in Dragoman): activation gradients are assigned (=),
// parameter gradients are accumulated (+=).
#pragma once

#include <cstdint>

namespace dragoman::cpu {

// y = a + b.   a, b, y: [n] (y may alias a or b)
template <typename T>
void add(const T* a, const T* b, T* y, std::int64_t n);
// y += x.   [n]
template <typename T>
void accumulate(T* y, const T* x, std::int64_t n);
// y *= s.   [n]
template <typename T>
void scale(T* y, T s, std::int64_t n);

// y = max(x, 0).   [n] (y may alias x)
template <typename T>
void relu_forward(const T* x, T* y, std::int64_t n);
// dx = dy * (y > 0), from the forward's output y.   [n] (dx may alias dy)
template <typename T>
void relu_backward(const T* y, const T* dy, T* dx, std::int64_t n);

// y[r, c] += b[c].   y: [rows, cols], b: [cols]
template <typename T>
void bias_add(T* y, const T* b, std::int64_t rows, std::int64_t cols);
// db[c] += sum over r of dy[r, c] (rows summed in order).   dy: [rows, cols], db: [cols]
template <typename T>
void bias_backward(const T* dy, T* db, std::int64_t rows, std::int64_t cols);

// Inverted dropout with counter-based randomness: element i is kept when
// philox::uniform(seed, rng_stream, i) >= p, and then scaled by 1 / (1 - p); otherwise 0.
// The backward pass is the same function applied to the gradient (same seed and rng_stream).
// x, y: [n] (y may alias x); 0 <= p < 1.
template <typename T>
void dropout(const T* x, T* y, std::int64_t n, double p, std::uint64_t seed, std::uint64_t rng_stream);

// Sum of squares accumulated in double, in fixed blocks summed in order (thread-count independent).
template <typename T>
double sum_squares(const T* x, std::int64_t n);

}  // namespace dragoman::cpu
