// Element-wise CPU kernels: the spec for their CUDA twins. T is the storage type: double, float,
// bf16 or f16 (base/numeric.h). Each kernel reads its operands with load(), computes in acc_t<T>
// (double for double, float otherwise) and rounds each element it stores once, with store<T>();
// for float and double that is plain arithmetic in T. Row-parallel kernels give the same bits for
// any thread count; reductions over rows run sequentially per column, so they do too.
//
// Backward convention (as everywhere in Dragoman): activation gradients are assigned (=),
// parameter gradients are accumulated (+=).
#pragma once

#include <cstdint>

#include "base/numeric.h"

namespace dragoman::cpu {

// y = a + b, rounded once.   a, b, y: [n] (y may alias a or b)
template <typename T>
void add(const T* a, const T* b, T* y, std::int64_t n);
// y = y + x, rounded once.   [n]
template <typename T>
void accumulate(T* y, const T* x, std::int64_t n);
// y = y * s, rounded once.   [n]
template <typename T>
void scale(T* y, acc_t<T> s, std::int64_t n);

// y = max(x, 0): x itself or 0, no rounding.   [n] (y may alias x)
template <typename T>
void relu_forward(const T* x, T* y, std::int64_t n);
// dx = dy * (y > 0), from the forward's output y: dy itself or 0, no rounding.   [n] (dx may alias dy)
template <typename T>
void relu_backward(const T* y, const T* dy, T* dx, std::int64_t n);

// y = x * sigmoid(x) (Swish, SiLU), in acc_t<T>, rounded once (kernels/common/activation.h); f32
// with the vectorised exp_approx (kernels/cpu/vector_math.h: x / (1 + exp_approx(-x))), within an
// ulp or two of the same with std::exp.   [n] (y may alias x)
template <typename T>
void swish_forward(const T* x, T* y, std::int64_t n);
// dx = dy * d swish(x) / dx from the forward's input x, rounded once.   [n] (dx may alias dy)
template <typename T>
void swish_backward(const T* x, const T* dy, T* dx, std::int64_t n);

// y[r, c] = y[r, c] + b[c], rounded once.   y: [rows, cols], b: [cols] (both T: b is a weight the
// forward reads)
template <typename T>
void bias_add(T* y, const T* b, std::int64_t rows, std::int64_t cols);
// db[c] += sum over r of dy[r, c]: rows summed in order in acc_t<T>, then added to db (a parameter
// gradient, of the accumulator type: no rounding to T).   dy: [rows, cols] of T; db: [cols] of acc_t<T>
template <typename T>
void bias_backward(const T* dy, acc_t<T>* db, std::int64_t rows, std::int64_t cols);

// Inverted dropout with counter-based randomness: element i is kept when
// philox::uniform(seed, rng_stream, i) >= p, and then multiplied by keep_scale = 1 / (1 - p) (both
// in acc_t<T>) and rounded once; otherwise 0. The backward pass is the same function applied to the
// gradient (same seed and rng_stream).   x, y: [n] (y may alias x); 0 <= p < 1.
template <typename T>
void dropout(const T* x, T* y, std::int64_t n, double p, std::uint64_t seed, std::uint64_t rng_stream);
// out = x + dropout(y) in one pass: add(x, dropout(y)) bit for bit (the dropped element is rounded
// to T before the sum).   x, y, out: [n] (out may alias x or y); 0 <= p < 1
template <typename T>
void dropout_add(const T* x, const T* y, T* out, std::int64_t n, double p, std::uint64_t seed,
                 std::uint64_t rng_stream);

// Sum of squares accumulated in double for every T, in fixed blocks summed in order
// (thread-count independent); within a block in index order, or for f32 in the 16 double lanes of
// sum_squares_f32 (kernels/cpu/vector_math.h).
template <typename T>
double sum_squares(const T* x, std::int64_t n);

}  // namespace dragoman::cpu
