// int8 linear layers for CPU decoding (translate --precision int8), the scheme CTranslate2 and
// Marian use: weights quantized once per output row, activations per input row when they arrive,
// products summed exactly in int32, the result scaled back to float.
//   quantize_rows: scale[r] = max_j |x[r, j]| / 127 (1 for an all-zero row), q = x / scale rounded
//                  to nearest even and clamped to [-127, 127].
//   linear_int8:   y[r, j] = (sum_k qx[r, k] * qw[j, k]) * sx[r] * sw[j] + bias[j] (in float, in that
//                  order), then max(y, 0) with relu. The int32 sum is exact (|q| <= 127 and in <= 2^17),
//                  so any summation order gives the same bits: oneDNN's matmul on weights packed at
//                  load (kernels/cpu/packed_gemm.h) or its dnnl_gemm_s8s8s32 where the build has
//                  oneDNN, a plain loop otherwise; linear_int8_reference is that loop, the spec the
//                  tests hold the fast paths to.
#pragma once

#include <cstdint>

namespace dragoman::cpu {

class PackedWeights;

void quantize_rows(const float* x, std::int64_t rows, std::int64_t cols, std::int8_t* q, float* scales);

//   x: [rows, in] float; qw: [out, in]; sw: [out]; bias: [out] or null; y: [rows, out]
// `packed`: qw packed once (PackedWeights::pack_s8, kernels/cpu/packed_gemm.h), for its products;
// qw is then not read (it may be null).
void linear_int8(const float* x, std::int64_t rows, std::int64_t in, const std::int8_t* qw, const float* sw,
                 std::int64_t out, const float* bias, bool relu, float* y, const PackedWeights* packed = nullptr);
void linear_int8_reference(const float* x, std::int64_t rows, std::int64_t in, const std::int8_t* qw, const float* sw,
                           std::int64_t out, const float* bias, bool relu, float* y);

}  // namespace dragoman::cpu
