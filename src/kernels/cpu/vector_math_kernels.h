// The row kernels of vector_math.h, written once for every instruction-set level: included only by
// vector_math_baseline.cpp, vector_math_avx2.cpp and vector_math_avx512.cpp, each compiled with its
// level's flags (src/CMakeLists.txt) after defining
//   DRAGOMAN_VECTOR_WIDTH      floats a register: 4 (SSE2), 8 (AVX2), 16 (AVX-512)
//   DRAGOMAN_VECTOR_NAMESPACE  a namespace of that file's own
//   DRAGOMAN_VECTOR_ISA        its CpuIsa
//   DRAGOMAN_VECTOR_TABLE      the name of its VectorKernels table
//
// The code uses GCC's vector types of the register's width (vf: W floats), so every operation is one
// instruction of that level, and keeps its sums in 16 lanes (R = 16 / W registers) so that every
// level adds in the same order (vector_math.h). Everything here has internal linkage or lives in
// the file's own namespace, and calls no inline function of another header: an AVX-512 copy of a
// shared inline function could otherwise be the one the linker keeps for every caller.
//
// No FMA contraction (-ffp-contract=off for these files): a * b + c rounds twice at every level.

#include <cstdint>

#include "kernels/cpu/vector_math.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace dragoman::cpu::DRAGOMAN_VECTOR_NAMESPACE {
namespace {

constexpr int W = DRAGOMAN_VECTOR_WIDTH;
constexpr int kLanes = kVectorLanes;
constexpr int R = kLanes / W;
static_assert(kLanes % W == 0, "16 lanes are whole registers");

typedef float vf __attribute__((vector_size(4 * W)));
typedef std::int32_t vi __attribute__((vector_size(4 * W)));

// 16 lanes: R registers.
struct Lanes {
  vf v[R];
};

inline vf splat(float x) { return vf{} + x; }

inline vf load(const float* p) {
  vf v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

inline void store(float* p, vf v) { __builtin_memcpy(p, &v, sizeof v); }

inline Lanes load16(const float* p) {
  Lanes l;
  for (int r = 0; r < R; ++r) l.v[r] = load(p + r * W);
  return l;
}

// The `count` < 16 floats at p in lanes 0 .. count, `fill` in the others.
inline Lanes load_partial(const float* p, std::int64_t count, float fill) {
  float buffer[kLanes];
  for (int l = 0; l < kLanes; ++l) buffer[l] = fill;
  for (std::int64_t l = 0; l < count; ++l) buffer[l] = p[l];
  return load16(buffer);
}

// exp_approx of vector_math.h, the same operations in the same order in every lane.
inline vf exp_v(vf x) {
  const vf high = splat(88.3762626647949f), low = splat(-87.3365447504019f);
  vf c = x > high ? high : x;
  c = c < low ? low : c;
  const vf n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  vf r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const vf p = exp_polynomial(r);
  const vi bits = (__builtin_convertvector(n, vi) + 127) << 23;
  vf y = p * (vf)bits;  // 2^n
  y = x < low ? vf{} : y;
  y = x > high ? splat(__builtin_inff()) : y;
  return x != x ? x : y;
}

// The fixed tree over 16 lanes in memory (float or double): lane l += lane l + 8, then + 4, + 2, + 1.
template <typename F>
inline F lanes_tree(F* lanes) {
  for (int half = kLanes / 2; half >= 1; half /= 2) {
    for (int j = 0; j < half; ++j) lanes[j] = lanes[j] + lanes[j + half];
  }
  return lanes[0];
}

// The same tree over the 16 lanes of registers.
inline float tree_sum(const Lanes& l) {
  float s[kLanes];
  for (int r = 0; r < R; ++r) store(s + r * W, l.v[r]);
  return lanes_tree(s);
}

inline float tree_max(const Lanes& l) {
  float s[kLanes];
  for (int r = 0; r < R; ++r) store(s + r * W, l.v[r]);
  for (int half = kLanes / 2; half >= 1; half /= 2) {
    for (int j = 0; j < half; ++j) s[j] = s[j + half] > s[j] ? s[j + half] : s[j];
  }
  return s[0];
}

// Lanes 0 .. count of a register group true (as the all-ones vi of a comparison).
inline vi lanes_below(int r, std::int64_t count) {
  vi index;
  for (int j = 0; j < W; ++j) index[j] = r * W + j;
  return index < static_cast<std::int32_t>(count);
}

float max_f32(const float* x, std::int64_t n) {
  Lanes m;
  for (int r = 0; r < R; ++r) m.v[r] = splat(-__builtin_inff());
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Lanes v = load16(x + i);
    for (int r = 0; r < R; ++r) m.v[r] = v.v[r] > m.v[r] ? v.v[r] : m.v[r];  // NaN: not greater
  }
  if (i < n) {
    const Lanes v = load_partial(x + i, n - i, -__builtin_inff());
    for (int r = 0; r < R; ++r) m.v[r] = v.v[r] > m.v[r] ? v.v[r] : m.v[r];
  }
  return tree_max(m);
}

// Adds exp(x[i] - shift) to the lanes (storing them to out[i] when out is not null).
template <bool kStore>
float exp_sum(const float* x, std::int64_t n, float shift, float* out) {
  Lanes sum;
  for (int r = 0; r < R; ++r) sum.v[r] = vf{};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Lanes v = load16(x + i);
    for (int r = 0; r < R; ++r) {
      const vf e = exp_v(v.v[r] - shift);
      if (kStore) store(out + i + r * W, e);
      sum.v[r] += e;
    }
  }
  if (i < n) {
    const std::int64_t rest = n - i;
    const Lanes v = load_partial(x + i, rest, 0.0f);
    float stored[kLanes];
    for (int r = 0; r < R; ++r) {
      const vf e = exp_v(v.v[r] - shift);
      store(stored + r * W, e);
      sum.v[r] += lanes_below(r, rest) ? e : vf{};  // the missing lanes add nothing
    }
    if (kStore) {
      for (std::int64_t l = 0; l < rest; ++l) out[i + l] = stored[l];
    }
  }
  return tree_sum(sum);
}

float sum_exp_f32(const float* x, std::int64_t n, float shift) { return exp_sum<false>(x, n, shift, nullptr); }

float exp_store_f32(const float* x, std::int64_t n, float shift, float* out) { return exp_sum<true>(x, n, shift, out); }

float dot_f32(const float* a, const float* b, std::int64_t n) {
  Lanes sum;
  for (int r = 0; r < R; ++r) sum.v[r] = vf{};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Lanes va = load16(a + i), vb = load16(b + i);
    for (int r = 0; r < R; ++r) sum.v[r] += va.v[r] * vb.v[r];
  }
  if (i < n) {
    // Zeros in both: the missing lanes add 0 * 0 = +0, which leaves a sum as it is (a sum that
    // starts at +0 is never -0 in round-to-nearest).
    const Lanes va = load_partial(a + i, n - i, 0.0f), vb = load_partial(b + i, n - i, 0.0f);
    for (int r = 0; r < R; ++r) sum.v[r] += va.v[r] * vb.v[r];
  }
  return tree_sum(sum);
}

// The sums of layer norm (vector_math.h): whole groups of 16 in registers, the last partial group
// added lane by lane (the missing lanes add nothing), then the fixed tree.
float sum_f32(const float* x, std::int64_t n) {
  Lanes acc;
  for (int r = 0; r < R; ++r) acc.v[r] = vf{};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Lanes v = load16(x + i);
    for (int r = 0; r < R; ++r) acc.v[r] += v.v[r];
  }
  float lanes[kLanes];
  for (int r = 0; r < R; ++r) store(lanes + r * W, acc.v[r]);
  for (std::int64_t l = 0; i + l < n; ++l) lanes[l] += x[i + l];
  return lanes_tree(lanes);
}

float sum_squared_deviations_f32(const float* x, std::int64_t n, float mean) {
  Lanes acc;
  for (int r = 0; r < R; ++r) acc.v[r] = vf{};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Lanes v = load16(x + i);
    for (int r = 0; r < R; ++r) {
      const vf d = v.v[r] - mean;
      acc.v[r] += d * d;
    }
  }
  float lanes[kLanes];
  for (int r = 0; r < R; ++r) store(lanes + r * W, acc.v[r]);
  for (std::int64_t l = 0; i + l < n; ++l) {
    const float d = x[i + l] - mean;
    lanes[l] += d * d;
  }
  return lanes_tree(lanes);
}

void layer_norm_sums_f32(const float* dy, const float* weight, const float* x, std::int64_t n, float mean, float rstd,
                         float* sums) {
  Lanes g_acc, gx_acc;
  for (int r = 0; r < R; ++r) g_acc.v[r] = gx_acc.v[r] = vf{};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Lanes vdy = load16(dy + i), vw = load16(weight + i), vx = load16(x + i);
    for (int r = 0; r < R; ++r) {
      const vf g = vdy.v[r] * vw.v[r];
      g_acc.v[r] += g;
      gx_acc.v[r] += g * ((vx.v[r] - mean) * rstd);
    }
  }
  float g_lanes[kLanes], gx_lanes[kLanes];
  for (int r = 0; r < R; ++r) {
    store(g_lanes + r * W, g_acc.v[r]);
    store(gx_lanes + r * W, gx_acc.v[r]);
  }
  for (std::int64_t l = 0; i + l < n; ++l) {
    const float g = dy[i + l] * weight[i + l];
    g_lanes[l] += g;
    gx_lanes[l] += g * ((x[i + l] - mean) * rstd);
  }
  sums[0] = lanes_tree(g_lanes);
  sums[1] = lanes_tree(gx_lanes);
}

void swish_f32(const float* x, std::int64_t n, float* y) {
  std::int64_t i = 0;
  for (; i + W <= n; i += W) {
    const vf v = load(x + i);
    store(y + i, v / (exp_v(-v) + 1.0f));
  }
  for (; i < n; ++i) y[i] = swish_approx(x[i]);
}

void subtract_f32(float* x, std::int64_t n, float value) {
  std::int64_t i = 0;
  for (; i + W <= n; i += W) store(x + i, load(x + i) - value);
  for (; i < n; ++i) x[i] -= value;
}

float max_abs_f32(const float* x, std::int64_t n) {
  Lanes m;
  for (int r = 0; r < R; ++r) m.v[r] = vf{};
  const auto step = [&m](const Lanes& v) {
    for (int r = 0; r < R; ++r) {
      const vf a = v.v[r] < 0.0f ? -v.v[r] : v.v[r];
      m.v[r] = a > m.v[r] ? a : m.v[r];  // NaN: not greater
    }
  };
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) step(load16(x + i));
  if (i < n) step(load_partial(x + i, n - i, 0.0f));
  return tree_max(m);
}

// Whether any lane of a comparison's result is true.
inline bool any_lane(vi m) {
#if DRAGOMAN_VECTOR_WIDTH == 16
  return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) != 0;
#elif DRAGOMAN_VECTOR_WIDTH == 8
  return _mm256_movemask_ps((__m256)m) != 0;
#else
  return _mm_movemask_ps((__m128)m) != 0;
#endif
}

std::int64_t first_above_f32(const float* x, std::int64_t n, float threshold) {
  const vf t = splat(threshold);
  std::int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {  // four registers a test: a hit is rare once a top-k list is full
    if (any_lane((load(x + i) > t) | (load(x + i + W) > t) | (load(x + i + 2 * W) > t) | (load(x + i + 3 * W) > t)))
      break;
  }
  for (; i < n; ++i) {
    if (x[i] > threshold) return i;  // NaN: not greater
  }
  return n;
}

// 16 int32 values in [-127, 127] (R registers) to 16 int8 at q (saturating packs where there are,
// which change nothing in that range).
inline void store_int8(const vi* v, std::int8_t* q) {
#if DRAGOMAN_VECTOR_WIDTH == 16
  typedef std::int8_t vb __attribute__((vector_size(16)));
  const vb narrow = __builtin_convertvector(v[0], vb);  // vpmovdb
  __builtin_memcpy(q, &narrow, sizeof narrow);
#elif DRAGOMAN_VECTOR_WIDTH == 8
  const __m256i a = (__m256i)v[0], b = (__m256i)v[1];
  const __m128i ab_low = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  const __m128i ab_high = _mm_packs_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm_packs_epi16(ab_low, ab_high));
#elif DRAGOMAN_VECTOR_WIDTH == 4 && defined(__SSE2__)
  const __m128i low = _mm_packs_epi32((__m128i)v[0], (__m128i)v[1]);
  const __m128i high = _mm_packs_epi32((__m128i)v[2], (__m128i)v[3]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm_packs_epi16(low, high));
#else
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < W; ++j) q[r * W + j] = static_cast<std::int8_t>(v[r][j]);
  }
#endif
}

void quantize_row_f32(const float* x, std::int64_t n, float scale, float limit, std::int8_t* q) {
  // |x / scale| <= limit for the row's own scale: adding and subtracting 1.5 x 2^23 rounds it to an
  // integer in the current (nearest-even) rounding mode, as std::nearbyint does.
  const auto round_clamp = [scale, limit](const Lanes& v, vi* out) {
    for (int r = 0; r < R; ++r) {
      vf t = (v.v[r] / scale + 12582912.0f) - 12582912.0f;
      t = t < -limit ? splat(-limit) : t;
      t = t > limit ? splat(limit) : t;
      out[r] = __builtin_convertvector(t, vi);
    }
  };
  vi rounded[R];
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    round_clamp(load16(x + i), rounded);
    store_int8(rounded, q + i);
  }
  if (i < n) {
    std::int8_t buffer[kLanes];
    round_clamp(load_partial(x + i, n - i, 0.0f), rounded);
    store_int8(rounded, buffer);
    for (std::int64_t l = 0; l < n - i; ++l) q[i + l] = buffer[l];
  }
}

void dequantize_row_f32(const std::int32_t* products, float sx, const float* sw, std::int64_t n, const float* bias,
                        bool relu, float* y) {
  std::int64_t j = 0;
  for (; j + W <= n; j += W) {
    vi p;
    __builtin_memcpy(&p, products + j, sizeof p);
    vf value = __builtin_convertvector(p, vf) * sx * load(sw + j);
    if (bias != nullptr) value = value + load(bias + j);
    if (relu) value = value > 0.0f ? value : vf{};  // NaN -> 0
    store(y + j, value);
  }
  for (; j < n; ++j) {
    float value = static_cast<float>(products[j]) * sx * sw[j];
    if (bias != nullptr) value = value + bias[j];
    y[j] = relu && !(value > 0.0f) ? 0.0f : value;
  }
}

// The dot products of q with `keys` rows (at most 4) in 16 lanes each, as dot_f32 adds them.
template <int kKeys>
void dots(const float* q, const float* const* k, std::int64_t K, float* sums) {
  Lanes acc[kKeys];
  for (int s = 0; s < kKeys; ++s) {
    for (int r = 0; r < R; ++r) acc[s].v[r] = vf{};
  }
  std::int64_t i = 0;
  for (; i + kLanes <= K; i += kLanes) {
    const Lanes vq = load16(q + i);
    for (int s = 0; s < kKeys; ++s) {
      const Lanes vk = load16(k[s] + i);
      for (int r = 0; r < R; ++r) acc[s].v[r] += vq.v[r] * vk.v[r];
    }
  }
  if (i < K) {
    const Lanes vq = load_partial(q + i, K - i, 0.0f);
    for (int s = 0; s < kKeys; ++s) {
      const Lanes vk = load_partial(k[s] + i, K - i, 0.0f);
      for (int r = 0; r < R; ++r) acc[s].v[r] += vq.v[r] * vk.v[r];
    }
  }
  for (int s = 0; s < kKeys; ++s) sums[s] = tree_sum(acc[s]);
}

float scaled_dots_f32(const float* q, const float* k, std::int64_t k_stride, std::int64_t n, std::int64_t K,
                      float scale, float* out) {
  float largest = -__builtin_inff();
  std::int64_t s = 0;
  // Four keys a pass: q is read once for them. Each key's sum is dot_f32's, in a group or alone.
  for (; s + 4 <= n; s += 4) {
    const float* rows[4] = {k + s * k_stride, k + (s + 1) * k_stride, k + (s + 2) * k_stride, k + (s + 3) * k_stride};
    float sums[4];
    dots<4>(q, rows, K, sums);
    for (int j = 0; j < 4; ++j) {
      out[s + j] = sums[j] * scale;
      largest = out[s + j] > largest ? out[s + j] : largest;
    }
  }
  for (; s < n; ++s) {
    const float* row = k + s * k_stride;
    float sum;
    dots<1>(q, &row, K, &sum);
    out[s] = sum * scale;
    largest = out[s] > largest ? out[s] : largest;
  }
  return largest;
}

// scaled_dots_f32 with the keys transposed (vector_math.h): W keys a register, each key's 16 lane
// sums (lane l: the elements l, l + 16, ... in order, from +0) and dot_f32's tree over them, in
// registers that hold the same lane of W keys. Lanes past K keep their +0, as dot_f32's zero-padded
// group does. The tree is walked depth first (tree_node), so that a few registers hold it.

// Lane J's sum for the W keys at column s (kK: K when known at compile time, else 0).
template <int J, int kK>
inline vf lane_partial(const float* q, const float* kt, std::int64_t ld, std::int64_t K, std::int64_t s) {
  const std::int64_t size = kK > 0 ? kK : K;
  vf acc = vf{};
  for (std::int64_t i = J; i < size; i += kLanes) acc += splat(q[i]) * load(kt + i * ld + s);
  return acc;
}

// The value at lane J after the tree's level Half (16: the lane sums; then 8, 4, 2, 1):
// node(J, Half) = node(J, 2 Half) + node(J + Half, 2 Half), as tree_sum adds them.
template <int J, int Half, int kK>
inline vf tree_node(const float* q, const float* kt, std::int64_t ld, std::int64_t K, std::int64_t s) {
  if constexpr (Half == kLanes) {
    return lane_partial<J, kK>(q, kt, ld, K, s);
  } else {
    const vf left = tree_node<J, 2 * Half, kK>(q, kt, ld, K, s);
    return left + tree_node<J + Half, 2 * Half, kK>(q, kt, ld, K, s);
  }
}

template <int kK>
float dots_transposed(const float* q, const float* kt, std::int64_t ld, std::int64_t n, std::int64_t K, float scale,
                      float* out) {
  for (std::int64_t s = 0; s < n; s += W) {
    const vf dots = tree_node<0, 1, kK>(q, kt, ld, K, s) * scale;
    if (s + W <= n) {
      store(out + s, dots);
    } else {
      for (std::int64_t j = 0; j < n - s; ++j) out[s + j] = dots[j];
    }
  }
  float largest = -__builtin_inff();
  for (std::int64_t s = 0; s < n; ++s) largest = out[s] > largest ? out[s] : largest;
  return largest;
}

float scaled_dots_transposed_f32(const float* q, const float* kt, std::int64_t ld, std::int64_t n, std::int64_t K,
                                 float scale, float* out) {
  // The usual head sizes unrolled: the same operations, the loop over K known.
  if (K == 32) return dots_transposed<32>(q, kt, ld, n, K, scale, out);
  if (K == 64) return dots_transposed<64>(q, kt, ld, n, K, scale, out);
  return dots_transposed<0>(q, kt, ld, n, K, scale, out);
}

void add_outer_f32(const float* a, const float* x, std::int64_t n, std::int64_t K, float* rows, std::int64_t ld) {
  for (std::int64_t s = 0; s < n; ++s) {
    const float as = a[s];
    float* row = rows + s * ld;
    std::int64_t i = 0;
    for (; i + W <= K; i += W) store(row + i, load(row + i) + as * load(x + i));
    for (; i < K; ++i) row[i] += as * x[i];
  }
}

// out[i] += p[s] * v_s[i] in order of s; kSkipZero: rows of weight 0 are left out.
template <bool kSkipZero>
void weighted_rows(const float* p, const float* v, std::int64_t v_stride, std::int64_t n, std::int64_t Kv, float* out) {
  std::int64_t s = 0;
  // Four rows a pass, each element's sum still in order of s: out is read and written once for them.
  for (; s + 4 <= n; s += 4) {
    const float p0 = p[s], p1 = p[s + 1], p2 = p[s + 2], p3 = p[s + 3];
    if (kSkipZero && (p0 == 0.0f || p1 == 0.0f || p2 == 0.0f || p3 == 0.0f)) break;  // the loop below skips them
    const float* v0 = v + s * v_stride;
    const float *v1 = v0 + v_stride, *v2 = v1 + v_stride, *v3 = v2 + v_stride;
    std::int64_t i = 0;
    for (; i + W <= Kv; i += W) {
      store(out + i,
            (((load(out + i) + p0 * load(v0 + i)) + p1 * load(v1 + i)) + p2 * load(v2 + i)) + p3 * load(v3 + i));
    }
    for (; i < Kv; ++i) out[i] = (((out[i] + p0 * v0[i]) + p1 * v1[i]) + p2 * v2[i]) + p3 * v3[i];
  }
  for (; s < n; ++s) {
    if (kSkipZero && p[s] == 0.0f) continue;
    const float ps = p[s];
    const float* vs = v + s * v_stride;
    std::int64_t i = 0;
    for (; i + W <= Kv; i += W) store(out + i, load(out + i) + ps * load(vs + i));
    for (; i < Kv; ++i) out[i] += ps * vs[i];
  }
}

void add_weighted_rows_f32(const float* p, const float* v, std::int64_t v_stride, std::int64_t n, std::int64_t Kv,
                           float* out) {
  weighted_rows<true>(p, v, v_stride, n, Kv, out);
}

void add_rows_f32(const float* p, const float* v, std::int64_t v_stride, std::int64_t n, std::int64_t Kv, float* out) {
  weighted_rows<false>(p, v, v_stride, n, Kv, out);
}

}  // namespace

// Adam (vector_math.h): H = W / 2 elements a step, the moments in float, the rest in double.
constexpr int H = W / 2;
typedef float vh __attribute__((vector_size(4 * H)));
typedef double vd __attribute__((vector_size(8 * H)));

inline vd sqrt_v(vd x) {
#if DRAGOMAN_VECTOR_WIDTH == 16
  // (all lanes of the zero-masking form: GCC 12 warns of _mm512_sqrt_pd's undefined source)
  return (vd)_mm512_maskz_sqrt_pd(static_cast<__mmask8>(0xFF), (__m512d)x);
#elif DRAGOMAN_VECTOR_WIDTH == 8
  return (vd)_mm256_sqrt_pd((__m256d)x);
#elif defined(__SSE2__)
  return (vd)_mm_sqrt_pd((__m128d)x);
#else
  for (int j = 0; j < H; ++j) x[j] = __builtin_sqrt(x[j]);
  return x;
#endif
}

// One Adam step of H elements in registers.
inline void adam_h(vh& p, vh g, vh& m, vh& v, const common::AdamScalars<float>& s) {
  m = s.beta1 * m + s.one_minus_beta1 * g;
  v = s.beta2 * v + s.one_minus_beta2 * g * g;
  const vd pd = __builtin_convertvector(p, vd);
  const vd step = (__builtin_convertvector(m, vd) / s.correction1) /
                      (sqrt_v(__builtin_convertvector(v, vd) / s.correction2) + s.eps) +
                  s.weight_decay * pd;
  p = __builtin_convertvector(pd - s.lr * step, vh);
}

void adam_f32(float* param, const float* grad, float* m, float* v, std::int64_t n,
              const common::AdamScalars<float>& s) {
  vh g, mi, vi_, p;
  std::int64_t i = 0;
  for (; i + H <= n; i += H) {
    __builtin_memcpy(&g, grad + i, sizeof g);
    __builtin_memcpy(&mi, m + i, sizeof mi);
    __builtin_memcpy(&vi_, v + i, sizeof vi_);
    __builtin_memcpy(&p, param + i, sizeof p);
    adam_h(p, g, mi, vi_, s);
    __builtin_memcpy(m + i, &mi, sizeof mi);
    __builtin_memcpy(v + i, &vi_, sizeof vi_);
    __builtin_memcpy(param + i, &p, sizeof p);
  }
  if (i == n) return;
  // The last, partial step in zero-padded registers (zeros stay finite: 0 / (sqrt(0) + eps)).
  g = mi = vi_ = p = vh{};
  for (std::int64_t j = 0; j < n - i; ++j) {
    g[j] = grad[i + j];
    mi[j] = m[i + j];
    vi_[j] = v[i + j];
    p[j] = param[i + j];
  }
  adam_h(p, g, mi, vi_, s);
  for (std::int64_t j = 0; j < n - i; ++j) {
    m[i + j] = mi[j];
    v[i + j] = vi_[j];
    param[i + j] = p[j];
  }
}

// The sum of term(x[i]) in 16 double lanes (vector_math.h), H lanes a register: `wide` maps H
// floats to their H doubles' terms, `one` a float to its term, by the same operations.
template <typename Wide, typename One>
double double_lanes_sum(const float* x, std::int64_t n, Wide wide, One one) {
  constexpr int D = kLanes / H;  // registers of H doubles
  vd acc[D];
  for (int d = 0; d < D; ++d) acc[d] = vd{};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int d = 0; d < D; ++d) {
      vh part;
      __builtin_memcpy(&part, x + i + d * H, sizeof part);
      acc[d] += wide(part);
    }
  }
  double lanes[kLanes];
  __builtin_memcpy(lanes, acc, sizeof lanes);
  for (std::int64_t l = 0; i + l < n; ++l) lanes[l] += one(x[i + l]);  // the missing lanes add nothing
  return lanes_tree(lanes);
}

double sum_wide_f32(const float* x, std::int64_t n) {
  return double_lanes_sum(
      x, n, [](vh part) { return __builtin_convertvector(part, vd); },
      [](float value) { return static_cast<double>(value); });
}

double sum_squares_f32(const float* x, std::int64_t n) {
  return double_lanes_sum(
      x, n,
      [](vh part) {
        const vd wide = __builtin_convertvector(part, vd);
        return wide * wide;
      },
      [](float value) { return static_cast<double>(value) * static_cast<double>(value); });
}

extern const VectorKernels DRAGOMAN_VECTOR_TABLE;
const VectorKernels DRAGOMAN_VECTOR_TABLE = {
    DRAGOMAN_VECTOR_ISA,
    max_f32,
    sum_exp_f32,
    exp_store_f32,
    swish_f32,
    dot_f32,
    subtract_f32,
    max_abs_f32,
    first_above_f32,
    quantize_row_f32,
    dequantize_row_f32,
    scaled_dots_f32,
    add_weighted_rows_f32,
    adam_f32,
    scaled_dots_transposed_f32,
    add_outer_f32,
    add_rows_f32,
    sum_wide_f32,
    sum_f32,
    sum_squared_deviations_f32,
    layer_norm_sums_f32,
    sum_squares_f32,
};

}  // namespace dragoman::cpu::DRAGOMAN_VECTOR_NAMESPACE
