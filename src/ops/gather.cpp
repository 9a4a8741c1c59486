// Row copies of a decoder's state (see gather.h).
#include "ops/gather.h"

#include <string>

#include "base/error.h"
#include "kernels/gather.h"
#include "ops/dispatch.h"

namespace dragoman::ops {

namespace {

void require_same_device(const char* op, const Tensor& src, const Tensor& dst) {
  detail::require(src.device() == dst.device(), op,
                  "src is on " + src.device().str() + " and dst on " + dst.device().str());
}

// rows on src's GPU: device_rows when given, else uploaded.
Tensor rows_on_device(const Tensor& src, const std::vector<std::int32_t>& rows, const Tensor& device_rows) {
  if (device_rows.defined()) return device_rows;
  return Tensor::from_vector(rows, {static_cast<std::int64_t>(rows.size())}).to(src.device());
}

}  // namespace

void gather_row_prefixes(const Tensor& src, std::int64_t src_stride, Tensor& dst, std::int64_t dst_stride,
                         const std::vector<std::int32_t>& rows, std::int64_t row_bytes, const Tensor& device_rows) {
  constexpr const char* kOp = "gather_row_prefixes";
  require_same_device(kOp, src, dst);
  const auto count = static_cast<std::int64_t>(rows.size());
  detail::on_device(
      kOp, src,
      [&] {
        cpu::gather_row_prefixes(src.raw_data(), src_stride, dst.raw_data(), dst_stride, rows.data(), count, row_bytes);
      },
      [&](auto stream) {
        const Tensor index = rows_on_device(src, rows, device_rows);
        cuda::gather_row_prefixes(src.raw_data(), src_stride, dst.raw_data(), dst_stride, index.data<std::int32_t>(),
                                  count, row_bytes, stream);
      });
}

void gather_row_prefixes(const Tensor& src, std::int64_t src_stride, Tensor& dst, std::int64_t dst_stride,
                         const std::vector<std::int32_t>& rows, const std::vector<std::int64_t>& row_bytes) {
  constexpr const char* kOp = "gather_row_prefixes";
  require_same_device(kOp, src, dst);
  detail::require(src.device().is_cpu(), kOp, "per-row prefixes are for CPU tensors, got " + src.describe());
  detail::require(row_bytes.size() == rows.size(), kOp, "one prefix length per row expected");
  cpu::gather_row_prefixes(src.raw_data(), src_stride, dst.raw_data(), dst_stride, rows.data(),
                           static_cast<std::int64_t>(rows.size()), row_bytes.data());
}

void scatter_row_prefixes(const Tensor& src, std::int64_t src_stride, Tensor& dst, std::int64_t dst_stride,
                          const std::vector<std::int32_t>& rows, std::int64_t row_bytes) {
  constexpr const char* kOp = "scatter_row_prefixes";
  require_same_device(kOp, src, dst);
  const auto count = static_cast<std::int64_t>(rows.size());
  detail::on_device(
      kOp, src,
      [&] {
        cpu::scatter_row_prefixes(src.raw_data(), src_stride, dst.raw_data(), dst_stride, rows.data(), count,
                                  row_bytes);
      },
      [&](auto stream) {
        const Tensor index = rows_on_device(src, rows, Tensor());
        cuda::scatter_row_prefixes(src.raw_data(), src_stride, dst.raw_data(), dst_stride, index.data<std::int32_t>(),
                                   count, row_bytes, stream);
      });
}

void move_rows_in_place(const std::vector<std::int32_t>& rows, const std::vector<std::int64_t>& units,
                        const std::vector<RowBlock>& blocks) {
  detail::require(units.size() == rows.size(), "move_rows_in_place", "one prefix length per row expected");
  const cpu::RowMoves moves = cpu::plan_row_moves(rows.data(), static_cast<std::int64_t>(rows.size()), units.data());
  cpu::move_rows(moves, blocks);
}

}  // namespace dragoman::ops
