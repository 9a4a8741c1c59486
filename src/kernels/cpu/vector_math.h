// f32 row kernels for the hot loops of decoding and training on the CPU: exp, max,
// sums of exp and dot products over a row, attention's per-query loops and int8 row quantization.
// Each is compiled three times, for AVX-512, AVX2 and the x86-64 baseline (vector_math_kernels.h,
// written once with GCC's vector types: 16, 8 or 4 floats a register), and the level the CPU has is
// picked when the program starts (device/cpu/cpu_isa.h: by the CPU's features; DRAGOMAN_CPU_ISA
// forces a lower one).
//
// Every level gives the same bits. Sums and maxima over a row run in 16 lanes whatever the register
// width: lane l takes the elements i with i % 16 == l in order of i (a row's last, partial group
// adds nothing to the missing lanes), then the lanes are combined in one fixed tree (lane l and
// l + 8, then l + 4, l + 2, l + 1). There is no FMA contraction (each a * b + c rounds twice), and
// exp is the same sequence of operations in every lane as the scalar exp_approx below. So a
// machine with AVX-512 computes exactly what an AVX2 or an SSE2 machine does, and tests can hold
// every level to the baseline bit for bit (tests/kernels/test_vector_math.cpp).
//
// exp_approx is the exp these use: Cephes's single-precision exp (range reduction by ln 2 in two
// parts, a degree-6 polynomial, the exponent set from the bits), branch-free so that it
// vectorises. Against std::exp: at most 1 ulp apart on [-87.3, 88.3] (tested on a sweep); below
// -87.34 it is 0 (std::exp would give a denormal; -inf gives 0), above 88.38 +inf, NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

#include "device/cpu/cpu_isa.h"
#include "kernels/common/adam.h"

namespace dragoman::cpu {

// exp(r) for |r| <= ln 2 / 2 (Cephes' expf polynomial), the part of exp_approx that its vector twin
// (vector_math_kernels.h) shares: V is float or a GCC vector of floats, the same operations in order.
template <typename V>
inline V exp_polynomial(V r) {
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

inline float exp_approx(float x) {
  if (x != x) return x;  // NaN: before the conversion to an integer below, which NaN would make undefined
  constexpr float kHigh = 88.3762626647949f, kLow = -87.3365447504019f;
  float c = x > kHigh ? kHigh : x;
  c = c < kLow ? kLow : c;
  // n = round(c / ln 2), by the 1.5 x 2^23 trick (round to nearest without a library call).
  const float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = c - n * 0.693359375f;  // ln 2 = 0.693359375 - 2.12194440e-4, the first part exact
  r = r - n * -2.12194440e-4f;
  const float p = exp_polynomial(r);
  // 2^n: n is within [-126, 128] after the clamp, so n + 127 is a positive biased exponent (shifted
  // as unsigned: a left shift of a negative int is undefined in C++17).
  const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  float y = p * scale;
  y = x < kLow ? 0.0f : y;
  y = x > kHigh ? std::numeric_limits<float>::infinity() : y;
  return y;
}

// Swish with exp_approx: x / (1 + exp_approx(-x)) (every level the same bits: one division).
inline float swish_approx(float x) { return x / (exp_approx(-x) + 1.0f); }

// max of x[0 .. n) (NaN entries ignored); -inf for n = 0.
float max_f32(const float* x, std::int64_t n);
// sum of exp_approx(x[i] - shift).
float sum_exp_f32(const float* x, std::int64_t n, float shift);
// out[i] = exp_approx(x[i] - shift) (out may be x); returns their sum.
float exp_store_f32(const float* x, std::int64_t n, float shift, float* out);
// y[i] = swish_approx(x[i]) (y may be x): the f32 feed-forward layer's Swish (kernels/cpu/elementwise).
void swish_f32(const float* x, std::int64_t n, float* y);
// sum of a[i] * b[i].
float dot_f32(const float* a, const float* b, std::int64_t n);
// x[i] -= value.
void subtract_f32(float* x, std::int64_t n, float value);
// max of |x[i]| (0 for n = 0; NaN entries ignored).
float max_abs_f32(const float* x, std::int64_t n);

// The first i with x[i] > threshold (NaN entries are not), or n: a top-k list's scan of a row for
// entries better than its worst one (kernels/cpu/top_k.cpp).
std::int64_t first_above_f32(const float* x, std::int64_t n, float threshold);
// q[i] = x[i] / scale rounded to the nearest integer (ties to even, as std::nearbyint in the default
// rounding mode), clamped to [-limit, limit] (limit <= 127): int8 quantization of a row
// (kernels/cpu/quantize.h).
void quantize_row_f32(const float* x, std::int64_t n, float scale, float limit, std::int8_t* q);

// y[j] = float(products[j]) * sx * sw[j] (+ bias[j] when bias is not null), then max(., 0) with
// relu (NaN -> 0): a row of int8 products scaled back (kernels/cpu/quantize.h), in that order.
void dequantize_row_f32(const std::int32_t* products, float sx, const float* sw, std::int64_t n, const float* bias,
                        bool relu, float* y);

// Attention's inner loops for one query (kernels/cpu/attention.cpp): out[s] = scale * (q . k_s)
// for the n keys k_s = k + s * k_stride of size K; returns the largest (-inf for n = 0).
float scaled_dots_f32(const float* q, const float* k, std::int64_t k_stride, std::int64_t n, std::int64_t K,
                      float scale, float* out);
// out[i] += sum over s < n of p[s] * v_s[i], i < Kv, for the rows v_s = v + s * v_stride, added in
// order of s (each product rounded, then added, as a plain loop over s and i does); p[s] = 0
// rows skipped.
void add_weighted_rows_f32(const float* p, const float* v, std::int64_t v_stride, std::int64_t n, std::int64_t Kv,
                           float* out);

// scaled_dots_f32 for keys stored transposed: element i of key s at kt[i * ld + s]. The same bits as
// scaled_dots_f32 (each key's 16 lane sums and their tree), computed for several keys at once in
// registers instead of one key's lanes in a register: the training step's form, where all the
// queries of a (b, h) read the same keys (kernels/cpu/attention.cpp). ld >= n rounded up to 16, and
// the columns n .. ld of each row readable (their results are computed and dropped).
float scaled_dots_transposed_f32(const float* q, const float* kt, std::int64_t ld, std::int64_t n, std::int64_t K,
                                 float scale, float* out);
// rows[s * ld + i] += a[s] * x[i] for s < n, i < K (each product rounded, then added; a rank-1 update).
void add_outer_f32(const float* a, const float* x, std::int64_t n, std::int64_t K, float* rows, std::int64_t ld);
// add_weighted_rows_f32 without skipping the rows of weight 0 (a gradient's sum: 0 * inf stays NaN).
void add_rows_f32(const float* p, const float* v, std::int64_t v_stride, std::int64_t n, std::int64_t Kv, float* out);

// The sum of (double) x[i] in 16 lanes of double (lane l: the i with i % 16 == l, in order; then the
// lanes' tree): a cross-entropy's sum of logits (kernels/cpu/cross_entropy.cpp).
double sum_wide_f32(const float* x, std::int64_t n);

// Layer norm's row sums (kernels/cpu/layer_norm.cpp), in the 16 lanes above: the sum of x[i]; the
// sum of (x[i] - mean)^2; and sums[0] = the sum of g = dy[i] * weight[i], sums[1] = the sum of
// g * ((x[i] - mean) * rstd) (each operation rounded, in that order).
float sum_f32(const float* x, std::int64_t n);
float sum_squared_deviations_f32(const float* x, std::int64_t n, float mean);
void layer_norm_sums_f32(const float* dy, const float* weight, const float* x, std::int64_t n, float mean, float rstd,
                         float* sums);

// The sum of x[i]^2 in 16 lanes of double (each square of the double value; a gradient's norm).
double sum_squares_f32(const float* x, std::int64_t n);

// Adam on f32 parameters (kernels/cpu/adam.cpp): every element updated as common::adam_update<float>
// does (the moments in float, the step in double, the parameter rounded once), W / 2 elements at a
// time in double registers: IEEE division and square root in every lane, no FMA, so the bits are
// the scalar formula's at every level.
void adam_f32(float* param, const float* grad, float* m, float* v, std::int64_t n, const common::AdamScalars<float>& s);

// The lanes of the sums above (see the top of this file).
constexpr int kVectorLanes = 16;

// One instruction-set level's kernels (vector_math_{baseline,avx2,avx512}.cpp): the functions above,
// which call the active level's.
struct VectorKernels {
  CpuIsa isa;
  float (*max_f32)(const float*, std::int64_t);
  float (*sum_exp_f32)(const float*, std::int64_t, float);
  float (*exp_store_f32)(const float*, std::int64_t, float, float*);
  void (*swish_f32)(const float*, std::int64_t, float*);
  float (*dot_f32)(const float*, const float*, std::int64_t);
  void (*subtract_f32)(float*, std::int64_t, float);
  float (*max_abs_f32)(const float*, std::int64_t);
  std::int64_t (*first_above_f32)(const float*, std::int64_t, float);
  void (*quantize_row_f32)(const float*, std::int64_t, float, float, std::int8_t*);
  void (*dequantize_row_f32)(const std::int32_t*, float, const float*, std::int64_t, const float*, bool, float*);
  float (*scaled_dots_f32)(const float*, const float*, std::int64_t, std::int64_t, std::int64_t, float, float*);
  void (*add_weighted_rows_f32)(const float*, const float*, std::int64_t, std::int64_t, std::int64_t, float*);
  void (*adam_f32)(float*, const float*, float*, float*, std::int64_t, const common::AdamScalars<float>&);
  float (*scaled_dots_transposed_f32)(const float*, const float*, std::int64_t, std::int64_t, std::int64_t, float,
                                      float*);
  void (*add_outer_f32)(const float*, const float*, std::int64_t, std::int64_t, float*, std::int64_t);
  void (*add_rows_f32)(const float*, const float*, std::int64_t, std::int64_t, std::int64_t, float*);
  double (*sum_wide_f32)(const float*, std::int64_t);
  float (*sum_f32)(const float*, std::int64_t);
  float (*sum_squared_deviations_f32)(const float*, std::int64_t, float);
  void (*layer_norm_sums_f32)(const float*, const float*, const float*, std::int64_t, float, float, float*);
  double (*sum_squares_f32)(const float*, std::int64_t);
};

// `isa`'s kernels, for tests and benchmarks that compare the levels; throws Error where this CPU
// cannot run them (cpu_supports). The functions above use vector_kernels(active_cpu_isa()).
const VectorKernels& vector_kernels(CpuIsa isa);

}  // namespace dragoman::cpu
