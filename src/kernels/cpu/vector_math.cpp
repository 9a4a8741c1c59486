// f32 row kernels with run-time CPU dispatch (see vector_math.h).
#include "kernels/cpu/vector_math.h"

// One clone per vector width, chosen when the program starts (an ifunc): AVX-512 (Skylake-X and
// later, Zen 4 and later), AVX2 + FMA (Haswell and later), and the x86-64 baseline (SSE2).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DRAGOMAN_CPU_CLONES __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define DRAGOMAN_CPU_CLONES
#endif

namespace dragoman::cpu {

DRAGOMAN_CPU_CLONES float max_f32(const float* x, std::int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (std::int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

DRAGOMAN_CPU_CLONES float sum_exp_f32(const float* x, std::int64_t n, float shift) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < n; ++i) sum += exp_approx(x[i] - shift);
  return sum;
}

DRAGOMAN_CPU_CLONES float exp_store_f32(const float* x, std::int64_t n, float shift, float* out) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < n; ++i) {
    const float e = exp_approx(x[i] - shift);
    out[i] = e;
    sum += e;
  }
  return sum;
}

DRAGOMAN_CPU_CLONES float dot_f32(const float* a, const float* b, std::int64_t n) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

DRAGOMAN_CPU_CLONES void subtract_f32(float* x, std::int64_t n, float value) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) x[i] -= value;
}

DRAGOMAN_CPU_CLONES float max_abs_f32(const float* x, std::int64_t n) {
  float m = 0.0f;
#pragma omp simd reduction(max : m)
  for (std::int64_t i = 0; i < n; ++i) {
    const float a = x[i] < 0.0f ? -x[i] : x[i];
    m = a > m ? a : m;
  }
  return m;
}

DRAGOMAN_CPU_CLONES void quantize_row_f32(const float* x, std::int64_t n, float scale, std::int8_t* q) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    // |x / scale| <= 127 for the row's own scale: adding and subtracting 1.5 x 2^23 rounds it to an
    // integer in the current (nearest-even) rounding mode, as std::nearbyint does.
    float v = (x[i] / scale + 12582912.0f) - 12582912.0f;
    v = v < -127.0f ? -127.0f : v;
    v = v > 127.0f ? 127.0f : v;
    q[i] = static_cast<std::int8_t>(static_cast<std::int32_t>(v));
  }
}

DRAGOMAN_CPU_CLONES void dequantize_row_f32(const std::int32_t* products, float sx, const float* sw, std::int64_t n,
                                            const float* bias, bool relu, float* y) {
  if (bias != nullptr) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) {
      const float value = static_cast<float>(products[j]) * sx * sw[j] + bias[j];
      y[j] = relu && !(value > 0.0f) ? 0.0f : value;
    }
  } else {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) {
      const float value = static_cast<float>(products[j]) * sx * sw[j];
      y[j] = relu && !(value > 0.0f) ? 0.0f : value;
    }
  }
}

DRAGOMAN_CPU_CLONES float scaled_dots_f32(const float* q, const float* k, std::int64_t k_stride, std::int64_t n,
                                          std::int64_t K, float scale, float* out) {
  float largest = -std::numeric_limits<float>::infinity();
  std::int64_t s = 0;
  // Four keys a pass: q is read once for them, and their four sums run side by side.
  for (; s + 4 <= n; s += 4) {
    const float* k0 = k + s * k_stride;
    const float *k1 = k0 + k_stride, *k2 = k1 + k_stride, *k3 = k2 + k_stride;
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
#pragma omp simd reduction(+ : d0, d1, d2, d3)
    for (std::int64_t i = 0; i < K; ++i) {
      d0 += q[i] * k0[i];
      d1 += q[i] * k1[i];
      d2 += q[i] * k2[i];
      d3 += q[i] * k3[i];
    }
    out[s] = d0 * scale;
    out[s + 1] = d1 * scale;
    out[s + 2] = d2 * scale;
    out[s + 3] = d3 * scale;
    for (std::int64_t j = s; j < s + 4; ++j) largest = out[j] > largest ? out[j] : largest;
  }
  for (; s < n; ++s) {
    const float* ks = k + s * k_stride;
    float dot = 0;
#pragma omp simd reduction(+ : dot)
    for (std::int64_t i = 0; i < K; ++i) dot += q[i] * ks[i];
    out[s] = dot * scale;
    largest = out[s] > largest ? out[s] : largest;
  }
  return largest;
}

DRAGOMAN_CPU_CLONES void add_weighted_rows_f32(const float* p, const float* v, std::int64_t v_stride, std::int64_t n,
                                               std::int64_t Kv, float* out) {
  std::int64_t s = 0;
  // Four rows a pass, each element's sum still in order of s: out is read and written once for them.
  for (; s + 4 <= n; s += 4) {
    const float p0 = p[s], p1 = p[s + 1], p2 = p[s + 2], p3 = p[s + 3];
    if (p0 == 0.0f || p1 == 0.0f || p2 == 0.0f || p3 == 0.0f) break;  // the row-by-row loop skips them
    const float* v0 = v + s * v_stride;
    const float *v1 = v0 + v_stride, *v2 = v1 + v_stride, *v3 = v2 + v_stride;
#pragma omp simd
    for (std::int64_t i = 0; i < Kv; ++i) out[i] = (((out[i] + p0 * v0[i]) + p1 * v1[i]) + p2 * v2[i]) + p3 * v3[i];
  }
  for (; s < n; ++s) {
    if (p[s] == 0.0f) continue;
    const float ps = p[s];
    const float* vs = v + s * v_stride;
#pragma omp simd
    for (std::int64_t i = 0; i < Kv; ++i) out[i] += ps * vs[i];
  }
}

}  // namespace dragoman::cpu
