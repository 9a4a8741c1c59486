// int8 linear layers (see quantize.h).
#include "kernels/cpu/quantize.h"

#ifdef DRAGOMAN_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/cpu/vector_math.h"

namespace dragoman::cpu {
namespace {

void check_width(std::int64_t in) {
  if (in > (std::int64_t{1} << 17)) {
    throw Error("cpu::linear_int8: " + std::to_string(in) + " inputs could overflow the int32 sums (at most 2^17)");
  }
}

}  // namespace

std::string onednn_isa_name() {
#ifdef DRAGOMAN_WITH_ONEDNN
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "isa " + std::to_string(static_cast<int>(isa));
  }
#else
  return "none";
#endif
}

int int8_weight_max() {
#ifdef DRAGOMAN_WITH_ONEDNN
  // The AVX-512 levels from avx512_core_vnni up (bf16, AMX) include its bits.
  static const int max_q =
      (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ? 127 : 63;
  return max_q;
#else
  return 127;  // the plain loop: exact for any s8 weights
#endif
}

std::string int8_summary() {
#ifdef DRAGOMAN_WITH_ONEDNN
  if (int8_weight_max() == 127) return "8-bit weights (oneDNN " + onednn_isa_name() + ": VNNI, exact int32 sums)";
  return "7-bit weights (oneDNN " + onednn_isa_name() + ": no VNNI, its u8 x s8 pairs are summed in 16 bits)";
#else
  return "8-bit weights (plain loop: no oneDNN in this build)";
#endif
}

void quantize_rows(const float* x, std::int64_t rows, std::int64_t cols, std::int8_t* q, float* scales, int max_q) {
  if (max_q < 1 || max_q > 127)
    throw Error("cpu::quantize_rows: max_q must be in [1, 127], not " + std::to_string(max_q));
  const float limit = static_cast<float>(max_q);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    const float largest = max_abs_f32(row, cols);  // kernels/cpu/vector_math.h: vectorised
    const float scale = largest > 0.0f ? largest / limit : 1.0f;
    scales[r] = scale;
    quantize_row_f32(row, cols, scale, limit, q + r * cols);
  }
}

void quantize_weights(const float* w, std::int64_t out, std::int64_t in, std::int8_t* q, float* scales) {
  quantize_rows(w, out, in, q, scales, int8_weight_max());
}

void linear_int8_reference(const float* x, std::int64_t rows, std::int64_t in, const std::int8_t* qw, const float* sw,
                           std::int64_t out, const float* bias, bool relu, float* y) {
  check_width(in);
  std::vector<std::int8_t> qx(static_cast<std::size_t>(rows * in));
  std::vector<float> sx(static_cast<std::size_t>(rows));
  quantize_rows(x, rows, in, qx.data(), sx.data());
  std::vector<std::int32_t> products(static_cast<std::size_t>(out));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < out; ++j) {
      std::int32_t sum = 0;
      for (std::int64_t k = 0; k < in; ++k) sum += static_cast<std::int32_t>(qx[r * in + k]) * qw[j * in + k];
      products[static_cast<std::size_t>(j)] = sum;
    }
    dequantize_row_f32(products.data(), sx[static_cast<std::size_t>(r)], sw, out, bias, relu, y + r * out);
  }
}

void linear_int8(const float* x, std::int64_t rows, std::int64_t in, const std::int8_t* qw, const float* sw,
                 std::int64_t out, const float* bias, bool relu, float* y, const PackedWeights* packed) {
#ifdef DRAGOMAN_WITH_ONEDNN
  check_width(in);
  thread_local std::vector<std::int8_t> qx;
  thread_local std::vector<float> sx;
  thread_local std::vector<std::int32_t> products;
  // Grown, never shrunk: resizing up again after a smaller batch would zero the new elements
  // (2 % of a greedy int8 translation of the demo model went to that memset).
  const auto at_least = [](auto& buffer, std::int64_t n) {
    if (buffer.size() < static_cast<std::size_t>(n)) buffer.resize(static_cast<std::size_t>(n));
  };
  at_least(qx, rows * in);
  at_least(sx, rows);
  at_least(products, rows * out);
  // (Checked before x is read: a wrong `in` would read past its rows.)
  if (packed != nullptr && (!packed->is_s8() || packed->out() != out || packed->in() != in)) {
    throw Error("cpu::linear_int8: the packed weights are not this layer's s8 [out, in] weights");
  }
  quantize_rows(x, rows, in, qx.data(), sx.data());
  if (packed != nullptr) {
    packed->product_s8(qx.data(), rows, products.data());
  } else {
    const std::int32_t no_offset = 0;
    const dnnl_status_t status = dnnl_gemm_s8s8s32('N', 'T', 'F', rows, out, in, 1.0f, qx.data(), in, 0, qw, in, 0,
                                                   0.0f, products.data(), out, &no_offset);
    if (status != dnnl_success) {
      throw Error("cpu::linear_int8: oneDNN's dnnl_gemm_s8s8s32 failed (status " +
                  std::to_string(static_cast<int>(status)) + ")");
    }
  }
  // Plain pointers into the calling thread's buffers: in the parallel loop `products` and `sx` would
  // name each OpenMP thread's own (empty) thread_local vectors.
  const std::int32_t* sums = products.data();
  const float* row_scales = sx.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    dequantize_row_f32(sums + r * out, row_scales[r], sw, out, bias, relu, y + r * out);
  }
#else
  static_cast<void>(packed);  // nothing is packed without oneDNN (packed_gemm.h)
  linear_int8_reference(x, rows, in, qw, sw, out, bias, relu, y);
#endif
}

}  // namespace dragoman::cpu
