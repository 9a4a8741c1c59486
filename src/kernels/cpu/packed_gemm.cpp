// Weights packed once for oneDNN's matmul primitive (see packed_gemm.h).
#include "kernels/cpu/packed_gemm.h"

#ifdef DRAGOMAN_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "device/cpu/threads.h"
#include "kernels/cpu/quantize.h"
#include "kernels/gemm.h"

namespace dragoman::cpu {

#ifdef DRAGOMAN_WITH_ONEDNN

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Type = memory::data_type;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The primitive of one product shape: x [rows, in] (row stride ldx) times the packed W.
dnnl::matmul::primitive_desc describe(Type type, const memory::desc& weights, std::int64_t rows, std::int64_t ldx,
                                      std::int64_t out, std::int64_t in, bool bias, bool relu) {
  const memory::desc x({rows, in}, type, memory::dims{ldx, 1});
  const memory::desc y({rows, out}, type == Type::f32 ? Type::f32 : Type::s32, Tag::ab);
  dnnl::post_ops ops;
  if (relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  // The caller's scratchpad (run): with oneDNN's own, shared by every primitive, a primitive may not
  // run on a thread other than the one that made it, and the cached ones below are shared by
  // every thread (translators in threads of their own: the Python package's, serve's).
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::desc desc = bias ? dnnl::matmul::desc(x, weights, memory::desc({1, out}, Type::f32, Tag::ab), y)
                                       : dnnl::matmul::desc(x, weights, y);
  return {desc, attr, cpu_engine()};
}

// A number for each distinct packed layout, the same for equal layouts: the primitives' key (below)
// holds it instead of the layout's 700 bytes.
int layout_number(const memory::desc& layout) {
  static std::mutex mutex;
  static auto* const layouts = new std::vector<memory::desc>();  // never destroyed, as the primitives
  const std::lock_guard<std::mutex> lock(mutex);
  const auto it = std::find(layouts->begin(), layouts->end(), layout);
  if (it != layouts->end()) return static_cast<int>(it - layouts->begin());
  layouts->push_back(layout);
  return static_cast<int>(layouts->size()) - 1;
}

bool is_reference(const dnnl::matmul::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

}  // namespace

struct PackedWeights::Impl {
  Type type;
  memory::desc layout;
  int layout_id = -1;  // layout_number(layout)
  memory weights;  // owns the packed buffer
  // s8 weights where oneDNN's int8 kernels lack VNNI (7-bit weights, quantize.h): no packed layout
  // there, and dnnl_gemm_s8s8s32 sums the weights' bytes again on every call, one byte at a time (a
  // quarter of greedy int8 decoding's time at AVX2). Instead x + 128 (u8) times W (s8) through
  // dnnl_gemm_u8s8s32, whose pairs stay inside 16 bits with 7-bit weights (255 x 63 x 2 < 32768),
  // plus -128 x each row's sum of W, summed once here: the same int32 as x W^T.
  bool u8_gemm = false;
  std::vector<std::int8_t> plain;          // W [out, in]
  std::vector<std::int32_t> compensation;  // [out]: -128 x sum_k W[j, k]

  // The primitive of one product shape, made on first use and kept for the process: the layers of
  // one shape (a model's six encoder layers' feed-forward products, say) share it, so each row count
  // costs one primitive (about 0.1 ms to make) per shape rather than per layer. The key: the type,
  // the shape, the row count, x's row stride, bias and relu, the weights' layout (oneDNN chose it
  // when they were packed, for that thread count) and the calling thread's OpenMP thread count
  // (oneDNN fixes a primitive's, and its scratchpad's size, when it makes it). Primitives made once
  // run on any thread, concurrently: each run brings its own scratchpad.
  struct Primitive {
    dnnl::matmul matmul;
    memory::desc scratchpad;
  };
  const Primitive& primitive(std::int64_t rows, std::int64_t ldx, bool bias, bool relu, std::int64_t out,
                             std::int64_t in) const {
    using Key = std::tuple<Type, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool, int, int>;
    static std::mutex mutex;
    static auto* const primitives = new std::map<Key, Primitive>();  // never destroyed: no oneDNN work at exit
    const std::lock_guard<std::mutex> lock(mutex);
    const Key key{type, out, in, rows, ldx, bias, relu, layout_id, compute_threads()};
    auto it = primitives->find(key);
    if (it == primitives->end()) {
      const dnnl::matmul::primitive_desc pd = describe(type, layout, rows, ldx, out, in, bias, relu);
      it = primitives->emplace(key, Primitive{dnnl::matmul(pd), pd.scratchpad_desc()}).first;
    }
    return it->second;
  }
};

namespace {

// W [out, in] row-major is the matmul's weights [in, out] in layout "ba". nullptr when oneDNN's
// chosen layout is the plain one (nothing to gain) or only its reference kernels take the packed
// one for some row counts.
template <typename T>
std::unique_ptr<PackedWeights::Impl> pack(Type type, const T* w, std::int64_t out, std::int64_t in) {
  try {
    const memory::desc any({in, out}, type, Tag::any);
    const dnnl::matmul::primitive_desc chosen = describe(type, any, 64, in, out, in, false, false);
    const memory::desc layout = chosen.weights_desc();
    if (is_reference(chosen) || layout == memory::desc({in, out}, type, Tag::ba) ||
        layout == memory::desc({in, out}, type, Tag::ab)) {
      return nullptr;
    }
    for (const std::int64_t rows : {1, 7, 256}) {
      if (is_reference(describe(type, layout, rows, in, out, in, type == Type::f32, type == Type::f32))) return nullptr;
    }
    auto impl = std::make_unique<PackedWeights::Impl>();
    impl->type = type;
    impl->layout = layout;
    impl->layout_id = layout_number(layout);
    impl->weights = memory(layout, cpu_engine());
    memory plain(memory::desc({in, out}, type, Tag::ba), cpu_engine(), const_cast<T*>(w));
    dnnl::stream stream(cpu_engine());
    dnnl::reorder(plain, impl->weights).execute(stream, plain, impl->weights);
    stream.wait();
    return impl;
  } catch (const dnnl::error& e) {
    throw Error(std::string("cpu::PackedWeights: oneDNN could not pack ") + std::to_string(out) + " x " +
                std::to_string(in) + " weights: " + e.what());
  }
}

// Runs `primitive` on x [rows, in] (row stride ldx) into y [rows, out], on the calling thread's
// OpenMP threads.
void run(const PackedWeights::Impl& impl, const PackedWeights::Impl::Primitive& primitive, void* x, std::int64_t rows,
         std::int64_t ldx, std::int64_t in, const float* bias, std::int64_t out, void* y) {
  thread_local dnnl::stream stream(cpu_engine());
  thread_local std::vector<std::uint8_t> scratchpad;  // grown, never shrunk; 64-byte aligned below
  constexpr std::size_t kAlign = 64;
  const std::size_t scratch_bytes = primitive.scratchpad.get_size();
  if (scratchpad.size() < scratch_bytes + kAlign) scratchpad.resize(scratch_bytes + kAlign);
  void* scratch = scratchpad.data() + (kAlign - reinterpret_cast<std::uintptr_t>(scratchpad.data()) % kAlign) % kAlign;
  const Type y_type = impl.type == Type::f32 ? Type::f32 : Type::s32;
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(memory::desc({rows, in}, impl.type, memory::dims{ldx, 1}), cpu_engine(), x)},
      {DNNL_ARG_WEIGHTS, impl.weights},
      {DNNL_ARG_DST, memory(memory::desc({rows, out}, y_type, Tag::ab), cpu_engine(), y)}};
  if (bias != nullptr) {
    args.emplace(DNNL_ARG_BIAS,
                 memory(memory::desc({1, out}, Type::f32, Tag::ab), cpu_engine(), const_cast<float*>(bias)));
  }
  args.emplace(DNNL_ARG_SCRATCHPAD, memory(primitive.scratchpad, cpu_engine(), scratch));
  primitive.matmul.execute(stream, args);
  stream.wait();
}

}  // namespace

std::shared_ptr<const PackedWeights> PackedWeights::pack_f32(const float* w, std::int64_t out, std::int64_t in) {
  std::unique_ptr<Impl> impl = pack(Type::f32, w, out, in);
  if (!impl) return nullptr;
  return std::shared_ptr<const PackedWeights>(new PackedWeights(false, out, in, std::move(impl)));
}

std::shared_ptr<const PackedWeights> PackedWeights::pack_s8(const std::int8_t* w, std::int64_t out, std::int64_t in) {
  std::unique_ptr<Impl> impl = pack(Type::s8, w, out, in);
  if (!impl && int8_weight_max() < 127) {  // no VNNI (see Impl::u8_gemm)
    impl = std::make_unique<Impl>();
    impl->type = Type::s8;
    impl->u8_gemm = true;
    impl->plain.assign(w, w + out * in);
    impl->compensation.resize(static_cast<std::size_t>(out));
    for (std::int64_t j = 0; j < out; ++j) {
      std::int32_t sum = 0;
      for (std::int64_t k = 0; k < in; ++k) sum += w[j * in + k];
      impl->compensation[static_cast<std::size_t>(j)] = -128 * sum;
    }
  }
  if (!impl) return nullptr;
  return std::shared_ptr<const PackedWeights>(new PackedWeights(true, out, in, std::move(impl)));
}

void PackedWeights::linear_f32(const float* x, std::int64_t rows, std::int64_t ldx, const float* bias, bool relu,
                               float* y) const {
  if (s8_ || ldx < in_) throw Error("cpu::PackedWeights::linear_f32: needs f32 weights and a row stride >= in");
  if (rows == 0) return;
  try {
    if (row_invariant_products() && rows != kInvariantRows) {
      const Impl::Primitive& primitive = impl_->primitive(kInvariantRows, ldx, bias != nullptr, relu, out_, in_);
      in_invariant_blocks(x, rows, ldx, in_, y, out_, out_, false, [&](const float* x_block, float* y_block) {
        run(*impl_, primitive, const_cast<float*>(x_block), kInvariantRows, ldx, in_, bias, out_, y_block);
      });
      return;
    }
    const Impl::Primitive& primitive = impl_->primitive(rows, ldx, bias != nullptr, relu, out_, in_);
    run(*impl_, primitive, const_cast<float*>(x), rows, ldx, in_, bias, out_, y);
  } catch (const dnnl::error& e) {
    throw Error(std::string("cpu::PackedWeights::linear_f32: oneDNN failed: ") + e.what());
  }
}

void PackedWeights::product_s8(const std::int8_t* x, std::int64_t rows, std::int32_t* y) const {
  if (!s8_) throw Error("cpu::PackedWeights::product_s8: needs s8 weights");
  if (rows == 0) return;
  if (impl_->u8_gemm) {
    thread_local std::vector<std::uint8_t> shifted;
    const auto n = static_cast<std::size_t>(rows * in_);
    if (shifted.size() < n) shifted.resize(n);  // grown, never shrunk (no zeroing again)
    for (std::size_t i = 0; i < n; ++i) {
      shifted[i] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(x[i]) ^ 0x80u);  // x + 128
    }
    const dnnl_status_t status =
        // (offsetc R: co, one value per column of y, is added to every row.)
        dnnl_gemm_u8s8s32('N', 'T', 'R', rows, out_, in_, 1.0f, shifted.data(), in_, 0, impl_->plain.data(), in_, 0,
                          0.0f, y, out_, impl_->compensation.data());
    if (status != dnnl_success) {
      throw Error("cpu::PackedWeights::product_s8: dnnl_gemm_u8s8s32 failed (status " + std::to_string(status) + ")");
    }
    return;
  }
  try {
    const Impl::Primitive& primitive = impl_->primitive(rows, in_, false, false, out_, in_);
    run(*impl_, primitive, const_cast<std::int8_t*>(x), rows, in_, in_, nullptr, out_, y);
  } catch (const dnnl::error& e) {
    throw Error(std::string("cpu::PackedWeights::product_s8: oneDNN failed: ") + e.what());
  }
}

std::size_t PackedWeights::bytes() const {
  return impl_->u8_gemm ? impl_->plain.size() + impl_->compensation.size() * sizeof(std::int32_t)
                        : impl_->layout.get_size();
}

#else  // no oneDNN: nothing is packed

struct PackedWeights::Impl {};

std::shared_ptr<const PackedWeights> PackedWeights::pack_f32(const float*, std::int64_t, std::int64_t) {
  return nullptr;
}

std::shared_ptr<const PackedWeights> PackedWeights::pack_s8(const std::int8_t*, std::int64_t, std::int64_t) {
  return nullptr;
}

void PackedWeights::linear_f32(const float*, std::int64_t, std::int64_t, const float*, bool, float*) const {
  throw Error("cpu::PackedWeights: this build has no oneDNN");
}

void PackedWeights::product_s8(const std::int8_t*, std::int64_t, std::int32_t*) const {
  throw Error("cpu::PackedWeights: this build has no oneDNN");
}

std::size_t PackedWeights::bytes() const { return 0; }

#endif

PackedWeights::PackedWeights(bool s8, std::int64_t out, std::int64_t in, std::unique_ptr<Impl> impl)
    : s8_(s8), out_(out), in_(in), impl_(std::move(impl)) {}

PackedWeights::~PackedWeights() = default;

}  // namespace dragoman::cpu
