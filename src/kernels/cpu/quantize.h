// int8 linear layers for CPU decoding (translate --precision int8), the scheme CTranslate2 and
// Marian use: weights quantized once per output row, activations per input row when they arrive,
// products summed exactly in int32, the result scaled back to float.
//   quantize_rows: scale[r] = max_j |x[r, j]| / M (1 for an all-zero row), q = x / scale rounded
//                  to nearest even and clamped to [-M, M]; M = 127 for activations, and
//                  int8_weight_max() for weights (quantize_weights).
//   linear_int8:   y[r, j] = (sum_k qx[r, k] * qw[j, k]) * sx[r] * sw[j] + bias[j] (in float, in that
//                  order), then max(y, 0) with relu. The int32 sum is exact (|q| <= 127 and in <= 2^17),
//                  so any summation order gives the same bits: oneDNN's matmul on weights packed at
//                  load (kernels/cpu/packed_gemm.h) or its dnnl_gemm_s8s8s32 where the build has
//                  oneDNN, a plain loop otherwise; linear_int8_reference is that loop, the spec the
//                  tests hold the fast paths to.
//
// The 16-bit trap. oneDNN computes s8 x s8 as u8 x s8: it adds 128 to the activations
// and subtracts 128 * sum(w) afterwards. With VNNI (vpdpbusd: AVX512-VNNI, and AMX) four u8 x s8
// products go straight into an int32. Without it (AVX2, AVX-512 without VNNI, SSE4.1) the kernels
// use vpmaddubsw, which adds two u8 x s8 products into a *saturating* int16: 255 * 127 * 2 = 64,770
// does not fit in 32,767, so large activations silently clip and the result is not the spec's.
// There the weights are quantized to 7 bits (|q| <= 63: 255 * 63 * 2 = 32,130 fits), as oneDNN's
// int8 documentation advises, and every product is exact again. The spec is then the same loop on
// the same 7-bit weights, so fast path and spec agree bit for bit on every CPU; 7-bit weights cost
// a little accuracy (docs/PERFORMANCE.md: int8 on CPUs without VNNI).
#pragma once

#include <cstdint>
#include <string>

namespace dragoman::cpu {

class PackedWeights;

void quantize_rows(const float* x, std::int64_t rows, std::int64_t cols, std::int8_t* q, float* scales,
                   int max_q = 127);

// The largest |q| of int8 weights on this machine: 127 where the int8 products are exact for any
// s8 weights (oneDNN running VNNI or AMX kernels, or a build without oneDNN: the plain loop), 63
// where oneDNN runs kernels without VNNI (above). Decided by oneDNN's effective ISA
// (dnnl_get_effective_cpu_isa: the CPU, limited by ONEDNN_MAX_CPU_ISA). oneDNN's AVX2-VNNI level
// (Alder Lake and later) also gets 63: whether oneDNN 2.6's s8 GEMM uses VNNI there is not verified.
int int8_weight_max();

// quantize_rows of weights [out, in] with int8_weight_max(): what translate --precision int8 does.
void quantize_weights(const float* w, std::int64_t out, std::int64_t in, std::int8_t* q, float* scales);

// One line for --version and benchmarks: the weights' bits and why ("8-bit weights (oneDNN
// avx512_core_vnni: VNNI)", "7-bit weights (oneDNN avx2: no VNNI, 16-bit pair sums)").
std::string int8_summary();

// oneDNN's effective ISA by name ("avx512_core_vnni", "avx2", ...); "none" without oneDNN.
std::string onednn_isa_name();

//   x: [rows, in] float; qw: [out, in]; sw: [out]; bias: [out] or null; y: [rows, out]
// `packed`: qw packed once (PackedWeights::pack_s8, kernels/cpu/packed_gemm.h), for its products;
// qw is then not read (it may be null).
void linear_int8(const float* x, std::int64_t rows, std::int64_t in, const std::int8_t* qw, const float* sw,
                 std::int64_t out, const float* bias, bool relu, float* y, const PackedWeights* packed = nullptr);
void linear_int8_reference(const float* x, std::int64_t rows, std::int64_t in, const std::int8_t* qw, const float* sw,
                           std::int64_t out, const float* bias, bool relu, float* y);

}  // namespace dragoman::cpu
