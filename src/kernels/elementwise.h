// Element-wise CPU kernels: the spec for their CUDA twins. T is the storage type: double, float,
// bf16 or f16 (base/numeric.h). Each kernel reads its operands with load(), computes in acc_t<T>
// (double for double, float otherwise) and rounds each element it stores once, with store<T>();
// for float and double that is plain arithmetic in T. Row-parallel kernels give the same bits for
// any thread count; reductions over rows run sequentially per column, so they do too.
//
// Backward convention (as everywhere in Dragoman): activation gradients are assigned (=),
// parameter gradients are accumulated (+=).
//
// CUDA (namespace cuda):
// Element-wise CUDA kernels, the twins of the CPU spec above: same names and arguments, plus
// a stream (and a workspace where a reduction needs one). T = double, float, bf16 or f16.
// The element-wise kernels round at the CPU spec's points with the same code (base/numeric.h,
// kernels/common/dropout.h) and give its bits exactly. The reductions are deterministic (a fixed
// order that depends only on the sizes, never on the GPU or a launch race); where their order
// differs from the CPU's sequential one, the header says so.
//
// All pointers are device memory of the stream's device (the caller holds its cuda::DeviceGuard);
// every function is asynchronous on `stream` and checks its launches.
#pragma once

#include <cstdint>

#include "base/numeric.h"
#include "device/cuda/stream.h"

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

namespace dragoman::cuda {

// y = a + b.   [n] (y may alias a or b)
template <typename T>
void add(const T* a, const T* b, T* y, std::int64_t n, Stream stream);
// y = y + x.   [n]
template <typename T>
void accumulate(T* y, const T* x, std::int64_t n, Stream stream);
// y = y * s.   [n]
template <typename T>
void scale(T* y, acc_t<T> s, std::int64_t n, Stream stream);

// y = max(x, 0).   [n] (y may alias x)
template <typename T>
void relu_forward(const T* x, T* y, std::int64_t n, Stream stream);
// dx = dy * (y > 0).   [n] (dx may alias dy)
template <typename T>
void relu_backward(const T* y, const T* dy, T* dx, std::int64_t n, Stream stream);

// y = x * sigmoid(x) (Swish).   [n] (y may alias x)
template <typename T>
void swish_forward(const T* x, T* y, std::int64_t n, Stream stream);
// dx = dy * swish'(x), from the forward's input x.   [n] (dx may alias dy)
template <typename T>
void swish_backward(const T* x, const T* dy, T* dx, std::int64_t n, Stream stream);

// y[r, c] = y[r, c] + b[c].   y: [rows, cols], b: [cols]
template <typename T>
void bias_add(T* y, const T* b, std::int64_t rows, std::int64_t cols, Stream stream);

// Rows per chunk of the two-pass column sums (bias_backward, layer_norm_backward): a constant, so
// the summation order depends on the sizes only.
inline constexpr std::int64_t kColumnSumChunkRows = 128;
// The number of row chunks of a column sum over `rows` rows.
inline std::int64_t column_sum_chunks(std::int64_t rows) {
  return (rows + kColumnSumChunkRows - 1) / kColumnSumChunkRows;
}

// db[c] += sum over r of dy[r, c]. Pass 1 sums each chunk of kColumnSumChunkRows rows in row order
// (one thread per column and chunk) into workspace; pass 2 adds the chunk sums in a fixed order
// (8 lanes per column, each every 8th chunk in order, then the lanes in order) and adds the total to
// db. With rows <= kColumnSumChunkRows this is the CPU
// spec's order and its bits; with more rows the sums are reassociated (fixed order, same bits run to
// run), within float summation error of the CPU's.
//   dy: [rows, cols] of T; db: [cols] of acc_t<T> (+=); workspace: [column_sum_chunks(rows) * cols] of acc_t<T>
template <typename T>
void bias_backward(const T* dy, acc_t<T>* db, std::int64_t rows, std::int64_t cols, acc_t<T>* workspace, Stream stream);

// Inverted dropout (kernels/elementwise.h): the CPU spec's mask and values, bit for bit.
//   x, y: [n] (y may alias x); 0 <= p < 1
template <typename T>
void dropout(const T* x, T* y, std::int64_t n, double p, std::uint64_t seed, std::uint64_t rng_stream, Stream stream);
// out = x + dropout(y) in one pass (kernels/elementwise.h): the CPU spec's bits.
//   x, y, out: [n] (out may alias x or y); 0 <= p < 1
template <typename T>
void dropout_add(const T* x, const T* y, T* out, std::int64_t n, double p, std::uint64_t seed, std::uint64_t rng_stream,
                 Stream stream);

// The CPU spec's blocks of the sum of squares (kernels/cpu/elementwise.cpp): elements in blocks of
// kSumSquaresBlock, each block summed in double, the block sums added in block order.
inline constexpr std::int64_t kSumSquaresBlock = std::int64_t{1} << 16;
inline std::int64_t sum_squares_blocks(std::int64_t n) { return (n + kSumSquaresBlock - 1) / kSumSquaresBlock; }

// *result = sum of x[i]^2 in double. Each block of kSumSquaresBlock elements is one CUDA block: every
// thread sums a fixed strided subset in order, then a fixed tree adds the threads' sums (the CPU adds
// a block's elements sequentially: the two differ in the last bits of a double, about 1e-16
// relative); the block sums are then added in block order by one thread, as the CPU does. Same bits
// run to run.   x: [n]; partials: [sum_squares_blocks(n)] doubles (workspace); result: one double
template <typename T>
void sum_squares(const T* x, std::int64_t n, double* partials, double* result, Stream stream);

// out[0] = the gradient norm, out[1] = the factor of kernels/common/clip.h, from *sum_squares (one
// thread: the host's formulas and bits, without a copy to the host).   out: two doubles
void norm_factor(const double* sum_squares, double clip_norm, double loss_scale, double* out, Stream stream);

}  // namespace dragoman::cuda
