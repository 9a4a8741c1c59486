// Products with weights packed once, for decoding: y[rows, out] = x[rows, in] W^T with W [out, in]
// fixed (a loaded model's linear layers). dnnl_sgemm and dnnl_gemm_s8s8s32 (cpu::gemm,
// cpu::linear_int8) copy W into the layout of their kernels on every call: a quarter of greedy
// decoding's time on the base model. Here W is reordered once, at load, into the blocked layout
// that oneDNN's matmul primitive reads on this CPU, and every product runs that primitive.
//   f32: y = x W^T (+ bias on every row) (then max(., 0)): cpu::gemm's product and cpu::bias_add
//        up to the order of the sums (float accumulation either way).
//   s8:  y = x W^T in int32: exact, the same bits as dnnl_gemm_s8s8s32 and the plain loop of
//        cpu::linear_int8_reference (|x| <= 127, |W| <= cpu::int8_weight_max(), in <= 2^17).
// One primitive per weight shape and (rows, row stride of x, bias, relu) for the whole process,
// shared by the layers of that shape, made on first use (about 0.1 ms) and kept. Thread-safe.
//
// pack_f32/pack_s8 return nullptr where packing gains nothing: a build without oneDNN, or a CPU
// where oneDNN keeps W in its plain layout (no AVX-512: its matmul is then the same GEMM); callers
// keep the plain products. Except s8 without VNNI: there pack_s8 keeps W with its row sums and
// product_s8 runs x + 128 (u8) x W through dnnl_gemm_u8s8s32 with the sums' correction, the same
// int32 without dnnl_gemm_s8s8s32's per-call, byte-by-byte sum of W (packed_gemm.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace dragoman::cpu {

class PackedWeights {
 public:
  static std::shared_ptr<const PackedWeights> pack_f32(const float* w, std::int64_t out, std::int64_t in);
  static std::shared_ptr<const PackedWeights> pack_s8(const std::int8_t* w, std::int64_t out, std::int64_t in);

  ~PackedWeights();
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  //   x: f32 [rows, in] with row stride ldx >= in; bias: f32 [out] or null; y: f32 [rows, out]
  // For packed f32 weights only.
  void linear_f32(const float* x, std::int64_t rows, std::int64_t ldx, const float* bias, bool relu, float* y) const;
  //   x: s8 [rows, in] dense; y: s32 [rows, out]. For packed s8 weights only.
  void product_s8(const std::int8_t* x, std::int64_t rows, std::int32_t* y) const;

  bool is_s8() const { return s8_; }
  std::int64_t out() const { return out_; }
  std::int64_t in() const { return in_; }
  std::size_t bytes() const;  // of the packed layout

  struct Impl;  // oneDNN's objects (packed_gemm.cpp)

 private:
  PackedWeights(bool s8, std::int64_t out, std::int64_t in, std::unique_ptr<Impl> impl);

  bool s8_;
  std::int64_t out_, in_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dragoman::cpu
