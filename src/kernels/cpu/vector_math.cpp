// f32 row kernels: the run-time dispatch to one instruction-set level's table (see vector_math.h).
#include "kernels/cpu/vector_math.h"

#include <string>

#include "base/error.h"

namespace dragoman::cpu {

// vector_math_{baseline,avx2,avx512}.cpp
namespace baseline_kernels {
extern const VectorKernels kBaselineVectorKernels;
}
#ifdef DRAGOMAN_VECTOR_X86
namespace avx2_kernels {
extern const VectorKernels kAvx2VectorKernels;
}
namespace avx512_kernels {
extern const VectorKernels kAvx512VectorKernels;
}
#endif

const VectorKernels& vector_kernels(CpuIsa isa) {
  if (!cpu_supports(isa)) {
    throw Error(std::string("cpu::vector_kernels: this CPU cannot run the ") + cpu_isa_name(isa) + " kernels");
  }
  switch (isa) {
#ifdef DRAGOMAN_VECTOR_X86
    case CpuIsa::avx512: return avx512_kernels::kAvx512VectorKernels;
    case CpuIsa::avx2: return avx2_kernels::kAvx2VectorKernels;
#endif
    default: return baseline_kernels::kBaselineVectorKernels;
  }
}

namespace {

// The active level's table, chosen on the first call (main chooses it at start-up).
const VectorKernels& active() {
  static const VectorKernels& table = vector_kernels(active_cpu_isa());
  return table;
}

}  // namespace

float max_f32(const float* x, std::int64_t n) { return active().max_f32(x, n); }

float sum_exp_f32(const float* x, std::int64_t n, float shift) { return active().sum_exp_f32(x, n, shift); }

float exp_store_f32(const float* x, std::int64_t n, float shift, float* out) {
  return active().exp_store_f32(x, n, shift, out);
}

float dot_f32(const float* a, const float* b, std::int64_t n) { return active().dot_f32(a, b, n); }

void swish_f32(const float* x, std::int64_t n, float* y) { active().swish_f32(x, n, y); }
void subtract_f32(float* x, std::int64_t n, float value) { active().subtract_f32(x, n, value); }

float max_abs_f32(const float* x, std::int64_t n) { return active().max_abs_f32(x, n); }

std::int64_t first_above_f32(const float* x, std::int64_t n, float threshold) {
  return active().first_above_f32(x, n, threshold);
}

void quantize_row_f32(const float* x, std::int64_t n, float scale, float limit, std::int8_t* q) {
  active().quantize_row_f32(x, n, scale, limit, q);
}

void dequantize_row_f32(const std::int32_t* products, float sx, const float* sw, std::int64_t n, const float* bias,
                        bool relu, float* y) {
  active().dequantize_row_f32(products, sx, sw, n, bias, relu, y);
}

float scaled_dots_f32(const float* q, const float* k, std::int64_t k_stride, std::int64_t n, std::int64_t K,
                      float scale, float* out) {
  return active().scaled_dots_f32(q, k, k_stride, n, K, scale, out);
}

void add_weighted_rows_f32(const float* p, const float* v, std::int64_t v_stride, std::int64_t n, std::int64_t Kv,
                           float* out) {
  active().add_weighted_rows_f32(p, v, v_stride, n, Kv, out);
}

void adam_f32(float* param, const float* grad, float* m, float* v, std::int64_t n,
              const common::AdamScalars<float>& s) {
  active().adam_f32(param, grad, m, v, n, s);
}

float scaled_dots_transposed_f32(const float* q, const float* kt, std::int64_t ld, std::int64_t n, std::int64_t K,
                                 float scale, float* out) {
  return active().scaled_dots_transposed_f32(q, kt, ld, n, K, scale, out);
}

void add_outer_f32(const float* a, const float* x, std::int64_t n, std::int64_t K, float* rows, std::int64_t ld) {
  active().add_outer_f32(a, x, n, K, rows, ld);
}

void add_rows_f32(const float* p, const float* v, std::int64_t v_stride, std::int64_t n, std::int64_t Kv, float* out) {
  active().add_rows_f32(p, v, v_stride, n, Kv, out);
}

double sum_wide_f32(const float* x, std::int64_t n) { return active().sum_wide_f32(x, n); }

float sum_f32(const float* x, std::int64_t n) { return active().sum_f32(x, n); }

float sum_squared_deviations_f32(const float* x, std::int64_t n, float mean) {
  return active().sum_squared_deviations_f32(x, n, mean);
}

void layer_norm_sums_f32(const float* dy, const float* weight, const float* x, std::int64_t n, float mean, float rstd,
                         float* sums) {
  active().layer_norm_sums_f32(dy, weight, x, n, mean, rstd, sums);
}

double sum_squares_f32(const float* x, std::int64_t n) { return active().sum_squares_f32(x, n); }

}  // namespace dragoman::cpu
