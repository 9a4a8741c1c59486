// Multi-head attention (see attention.h).
#include "ops/attention.h"

#include <cmath>

#include "kernels/attention.h"
#include "ops/dispatch.h"

namespace dragoman::ops {

using detail::require;

namespace {

// Checks the operands and returns the kernel's shape description.
cpu::AttentionShape describe(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& key_lengths, const AttentionOptions& o) {
  require(q.rank() == 3 && k.rank() == 3 && v.rank() == 3, op,
          "expected [B, rows, H*size] operands, got " + q.describe() + ", " + k.describe() + ", " + v.describe());
  for (const Tensor* t : {&k, &v}) {
    require(t->dtype() == q.dtype() && t->device() == q.device(), op, "operands differ: " + t->describe());
    require(t->strides()[2] == 1, op, "rows of k and v must be contiguous");
  }
  require(q.is_contiguous(), op, "q must be contiguous");
  const std::int64_t B = q.dim(0), H = o.heads;
  require(H >= 1 && q.dim(2) % H == 0 && v.dim(2) % H == 0 && k.dim(2) == q.dim(2), op,
          "head sizes do not divide: q " + q.describe() + ", k " + k.describe() + ", v " + v.describe() + ", " +
              std::to_string(H) + " heads");
  require(k.dim(0) == B && v.dim(0) == B && v.dim(1) == k.dim(1), op, "batch or key counts differ");
  // On q's device (the model keeps its lengths there) or on the CPU (uploaded by the CUDA case).
  require(key_lengths.dtype() == DType::kI32 && (key_lengths.device() == q.device() || key_lengths.device().is_cpu()) &&
              key_lengths.is_contiguous() && key_lengths.shape() == Shape{B},
          op,
          "key_lengths must be a contiguous i32 [B] tensor on " + q.device().str() + " or the CPU, got " +
              key_lengths.describe());
  cpu::AttentionShape a;
  a.batch = B;
  a.heads = H;
  a.queries = q.dim(1);
  a.keys = k.dim(1);
  a.key_size = q.dim(2) / H;
  a.value_size = v.dim(2) / H;
  a.q_batch_stride = q.strides()[0];
  a.q_row_stride = q.strides()[1];
  a.k_batch_stride = k.strides()[0];
  a.k_row_stride = k.strides()[1];
  a.v_batch_stride = v.strides()[0];
  a.v_row_stride = v.strides()[1];
  a.out_batch_stride = a.queries * H * a.value_size;
  a.out_row_stride = H * a.value_size;
  a.causal = o.causal;
  a.query_offset = o.query_offset;
  return a;
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_lengths,
                 const AttentionOptions& o, AttentionSaved* saved) {
  constexpr const char* kOp = "attention";
  const cpu::AttentionShape a = describe(kOp, q, k, v, key_lengths, o);
  require(o.dropout >= 0 && o.dropout < 1, kOp, "dropout must be in [0, 1)");
  const double scale = 1.0 / std::sqrt(static_cast<double>(a.key_size));
  Tensor out = Tensor::empty({a.batch, a.queries, a.heads * a.value_size}, q.dtype(), q.device());  // [B, T, H*Kv]
  Tensor lse;
  if (saved != nullptr) {
    lse = Tensor::empty({a.batch, a.heads, a.queries}, accumulator_dtype(q.dtype()), q.device());  // [B, H, T]
  }
  detail::on_device(
      kOp, q,
      [&] {
        detail::dispatch_storage(kOp, q, [&](auto zero) {
          using T = decltype(zero);
          cpu::attention_forward<T>(a, q.data<T>(), k.data<T>(), v.data<T>(), key_lengths.data<std::int32_t>(), scale,
                                    o.dropout, o.seed, o.rng_stream, saved != nullptr ? lse.data<acc_t<T>>() : nullptr,
                                    out.data<T>());
        });
      },
      [&](auto stream) {
        const Tensor lengths = key_lengths.to(q.device());  // [B] i32 on the device (no copy when there already)
        detail::dispatch_storage(kOp, q, [&](auto zero) {
          using T = decltype(zero);
          cuda::attention_forward<T>(a, q.data<T>(), k.data<T>(), v.data<T>(), lengths.data<std::int32_t>(), scale,
                                     o.dropout, o.seed, o.rng_stream, saved != nullptr ? lse.data<acc_t<T>>() : nullptr,
                                     out.data<T>(), stream);
        });
      });
  if (saved != nullptr) *saved = {lse};
  return out;
}

Tensor attention_probabilities(const Tensor& q, const Tensor& k, const Tensor& key_lengths, const AttentionOptions& o) {
  constexpr const char* kOp = "attention_probabilities";
  const Device cpu_device = Device::cpu();
  const Tensor qc = q.to(cpu_device).contiguous(), kc = k.to(cpu_device), lengths = key_lengths.to(cpu_device);
  const cpu::AttentionShape a = describe(kOp, qc, kc, kc, lengths, o);
  const double scale = 1.0 / std::sqrt(static_cast<double>(a.key_size));
  Tensor probs = Tensor::empty({a.batch, a.heads, a.queries, a.keys}, DType::kF32, cpu_device);  // [B, H, T, S]
  detail::dispatch_storage(kOp, qc, [&](auto zero) {
    using T = decltype(zero);
    cpu::attention_probabilities<T>(a, qc.data<T>(), kc.data<T>(), lengths.data<std::int32_t>(), scale,
                                    probs.data<float>());
  });
  return probs;
}

AttentionGrads attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_lengths,
                                  const AttentionOptions& o, const AttentionSaved& saved, const Tensor& dout) {
  constexpr const char* kOp = "attention_backward";
  const Tensor kc = k.contiguous(), vc = v.contiguous();
  const cpu::AttentionShape a = describe(kOp, q, kc, vc, key_lengths, o);
  require(dout.is_contiguous() && dout.dtype() == q.dtype() && dout.device() == q.device() &&
              dout.shape() == Shape{a.batch, a.queries, a.heads * a.value_size},
          kOp, "dout " + dout.describe() + " does not match the output");
  // The kernel reads lse as a [B, H, T] block: a saved tensor of another call would be read out of
  // bounds.
  detail::require_accumulator(kOp, "saved lse", saved.lse, q);
  detail::require_shape(kOp, "saved lse", saved.lse, {a.batch, a.heads, a.queries});
  const double scale = 1.0 / std::sqrt(static_cast<double>(a.key_size));
  AttentionGrads g{Tensor::empty(q.shape(), q.dtype(), q.device()), Tensor::empty(kc.shape(), q.dtype(), q.device()),
                   Tensor::empty(vc.shape(), q.dtype(), q.device())};
  detail::on_device(
      kOp, q,
      [&] {
        detail::dispatch_storage(kOp, q, [&](auto zero) {
          using T = decltype(zero);
          cpu::attention_backward<T>(a, q.data<T>(), kc.data<T>(), vc.data<T>(), key_lengths.data<std::int32_t>(),
                                     scale, o.dropout, o.seed, o.rng_stream, saved.lse.data<acc_t<T>>(), dout.data<T>(),
                                     g.dq.data<T>(), g.dk.data<T>(), g.dv.data<T>());
        });
      },
      [&](auto stream) {
        const Tensor lengths = key_lengths.to(q.device());  // [B] i32 on the device
        detail::dispatch_storage(kOp, q, [&](auto zero) {
          using T = decltype(zero);
          using A = acc_t<T>;
          // [B, H, T]: each query's sum of p * dprob, from the dq kernel to the dk/dv kernel
          Tensor workspace =
              Tensor::empty({cuda::attention_backward_workspace(a)}, accumulator_dtype(q.dtype()), q.device());
          cuda::attention_backward<T>(a, q.data<T>(), kc.data<T>(), vc.data<T>(), lengths.data<std::int32_t>(), scale,
                                      o.dropout, o.seed, o.rng_stream, saved.lse.data<A>(), dout.data<T>(),
                                      g.dq.data<T>(), g.dk.data<T>(), g.dv.data<T>(), workspace.data<A>(), stream);
        });
      });
  return g;
}

}  // namespace dragoman::ops
