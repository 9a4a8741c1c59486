// The k best entries of each row (see top_k.h).
#include "ops/top_k.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/top_k.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/top_k.h"

namespace dragoman::ops {

TopK top_k_rows(const Tensor& x, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b, std::int32_t eos) {
  if (x.rank() != 2 || x.dtype() != DType::kF32 || !x.is_contiguous() || k < 1 || eos < 0 || eos >= x.dim(1)) {
    throw Error("top_k_rows: expected dense f32 [rows, V], k >= 1 and eos in [0, V), got " + x.describe() + ", k " +
                std::to_string(k) + ", eos " + std::to_string(eos));
  }
  const std::int64_t rows = x.dim(0), v = x.dim(1);
  TopK out{Tensor::empty({rows, k}, DType::kF32, x.device()), Tensor::empty({rows, k}, DType::kI32, x.device()),
           Tensor::empty({rows}, DType::kF32, x.device())};
  if (x.device().is_cpu()) {
    std::vector<std::pair<double, std::int32_t>> best;
    float* values = out.values.data<float>();
    std::int32_t* ids = out.ids.data<std::int32_t>();
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* row = x.data<float>() + r * v;
      cpu::top_k_row(row, v, k, skip_a, skip_b, best);
      for (std::int64_t j = 0; j < k; ++j) {
        const bool found = j < static_cast<std::int64_t>(best.size());
        values[r * k + j] = found ? static_cast<float>(best[static_cast<std::size_t>(j)].first)
                                  : -std::numeric_limits<float>::infinity();
        ids[r * k + j] = found ? best[static_cast<std::size_t>(j)].second : -1;
      }
      out.eos_values.data<float>()[r] = row[eos];
    }
    return out;
  }
  const cuda::DeviceGuard guard(x.device().index);
  cuda::top_k_rows(x.data<float>(), rows, v, k, skip_a, skip_b, eos, out.values.data<float>(),
                   out.ids.data<std::int32_t>(), out.eos_values.data<float>(), cuda::stream_of(x.device().index));
  return out;
}

}  // namespace dragoman::ops
