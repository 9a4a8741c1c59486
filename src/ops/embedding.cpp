// Token embeddings (see embedding.h).
#include "ops/embedding.h"

#include "kernels/embedding.h"
#include "ops/dispatch.h"

namespace dragoman::ops {

using detail::require;

namespace {

void check_ids(const char* op, const Tensor& ids, const Tensor& table, const Tensor& positions,
               std::int64_t position_offset) {
  require(ids.dtype() == DType::kI32 && ids.device() == table.device() && ids.is_contiguous() && ids.rank() == 2, op,
          "ids must be a contiguous i32 [B, L] tensor on the table's device (" + table.device().str() + "), got " +
              ids.describe());
  require(table.rank() == 2, op, "table must be [V, D], got " + table.describe());
  const std::int64_t v = table.dim(0);
  // Ids on a GPU are not read back: a batch there was validated on the host by Batch::to
  // (model/batch.h).
  if (ids.device().is_cpu()) {
    const std::int32_t* p = ids.data<std::int32_t>();
    for (std::int64_t i = 0; i < ids.numel(); ++i) {
      require(p[i] >= 0 && p[i] < v, op,
              "token id " + std::to_string(p[i]) + " is outside the vocabulary [0, " + std::to_string(v) + ")");
    }
  }
  if (positions.defined()) {
    require(positions.rank() == 2 && positions.dim(1) == table.dim(1), op,
            "positions " + positions.describe() + " do not match table " + table.describe());
    require(position_offset >= 0 && position_offset + ids.dim(1) <= positions.dim(0), op,
            "positions up to " + std::to_string(position_offset + ids.dim(1)) + " exceed max_positions " +
                std::to_string(positions.dim(0)));
  }
}

}  // namespace

Tensor embedding(const Tensor& ids, const Tensor& table, const Tensor& positions, std::int64_t position_offset,
                 double scale) {
  constexpr const char* kOp = "embedding";
  check_ids(kOp, ids, table, positions, position_offset);
  detail::require_like(kOp, "table", table, table);
  if (positions.defined()) detail::require_like(kOp, "positions", positions, table);
  const std::int64_t d = table.dim(1);
  Tensor out = Tensor::empty({ids.dim(0), ids.dim(1), d}, table.dtype(), table.device());  // [B, L, D]
  detail::on_device(
      kOp, table,
      [&] {
        detail::dispatch_storage(kOp, table, [&](auto zero) {
          using T = decltype(zero);
          cpu::embedding_forward<T>(ids.data<std::int32_t>(), table.data<T>(),
                                    positions.defined() ? positions.data<T>() : nullptr, out.data<T>(), ids.numel(),
                                    ids.dim(1), position_offset, d, scale);
        });
      },
      [&](auto stream) {
        detail::dispatch_storage(kOp, table, [&](auto zero) {
          using T = decltype(zero);
          cuda::embedding_forward<T>(ids.data<std::int32_t>(), table.data<T>(),
                                     positions.defined() ? positions.data<T>() : nullptr, out.data<T>(), ids.numel(),
                                     ids.dim(1), position_offset, d, scale, stream);
        });
      });
  return out;
}

void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable, Tensor& dpositions,
                        std::int64_t position_offset, double scale, std::int32_t padding_id) {
  constexpr const char* kOp = "embedding_backward";
  check_ids(kOp, ids, dtable, dpositions, position_offset);
  // dout is an activation gradient; dtable and dpositions are parameter gradients, of dout's
  // accumulator dtype.
  detail::require_like(kOp, "dout", dout, dout);
  detail::require_accumulator(kOp, "dtable", dtable, dout);
  if (dpositions.defined()) detail::require_accumulator(kOp, "dpositions", dpositions, dout);
  const std::int64_t d = dtable.dim(1);
  detail::require_shape(kOp, "dout", dout, {ids.dim(0), ids.dim(1), d});
  detail::on_device(
      kOp, dtable,
      [&] {
        detail::dispatch_storage(kOp, dout, [&](auto zero) {
          using T = decltype(zero);
          using A = acc_t<T>;
          cpu::embedding_backward<T>(ids.data<std::int32_t>(), dout.data<T>(), dtable.data<A>(),
                                     dpositions.defined() ? dpositions.data<A>() : nullptr, ids.numel(), ids.dim(1),
                                     position_offset, d, scale, padding_id);
        });
      },
      [&](auto stream) {
        detail::dispatch_storage(kOp, dout, [&](auto zero) {
          using T = decltype(zero);
          using A = acc_t<T>;
          // The ids sorted with their rows, and CUB's storage (kernels/embedding.h).
          const std::int64_t bytes =
              static_cast<std::int64_t>(cuda::embedding_backward_workspace(ids.numel(), dtable.dim(0)));
          Tensor workspace = Tensor::empty({bytes}, DType::kU8, dtable.device());
          cuda::embedding_backward<T>(ids.data<std::int32_t>(), dout.data<T>(), dtable.data<A>(),
                                      dpositions.defined() ? dpositions.data<A>() : nullptr, ids.numel(), ids.dim(1),
                                      position_offset, d, scale, dtable.dim(0), workspace.raw_data(), stream,
                                      padding_id);
        });
      });
}

Tensor sinusoidal_positions(std::int64_t positions, std::int64_t d, DType dtype, SinusoidLayout layout) {
  constexpr const char* kOp = "sinusoidal_positions";
  require(d > 0 && d % 2 == 0, kOp, "d_model must be even, got " + std::to_string(d));
  require(layout != SinusoidLayout::kTensor2Tensor || d >= 4, kOp, "tensor2tensor sinusoids need d_model >= 4");
  Tensor out = Tensor::empty({positions, d}, dtype);  // [P, D]
  detail::dispatch_storage(kOp, out, [&](auto zero) {
    using T = decltype(zero);
    cpu::sinusoidal_positions<T>(out.data<T>(), positions, d, static_cast<int>(layout));
  });
  return out;
}

}  // namespace dragoman::ops
