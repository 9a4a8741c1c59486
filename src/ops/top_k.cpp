// The k best entries of each row (see top_k.h).
#include "ops/top_k.h"

#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "kernels/top_k.h"
#include "ops/dispatch.h"

namespace dragoman::ops {

namespace {

void check_arguments(const char* op, const Tensor& x, std::int64_t k, std::int32_t eos) {
  if (x.rank() != 2 || x.dtype() != DType::kF32 || !x.is_contiguous() || k < 1 || eos < 0 || eos >= x.dim(1)) {
    throw Error(std::string(op) + ": expected dense f32 [rows, V], k >= 1 and eos in [0, V), got " + x.describe() +
                ", k " + std::to_string(k) + ", eos " + std::to_string(eos));
  }
}

// The CPU op, into values/ids [rows, k] and eos_values [rows].
void top_k_rows_cpu(const Tensor& x, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b, std::int32_t eos,
                    float* values, std::int32_t* ids, float* eos_values) {
  const std::int64_t rows = x.dim(0), v = x.dim(1);
  std::vector<std::pair<double, std::int32_t>> best;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x.data<float>() + r * v;
    cpu::top_k_row(row, v, k, skip_a, skip_b, best);
    for (std::int64_t j = 0; j < k; ++j) {
      const bool found = j < static_cast<std::int64_t>(best.size());
      values[r * k + j] =
          found ? static_cast<float>(best[static_cast<std::size_t>(j)].first) : -std::numeric_limits<float>::infinity();
      ids[r * k + j] = found ? best[static_cast<std::size_t>(j)].second : -1;
    }
    eos_values[r] = row[eos];
  }
}

}  // namespace

TopK top_k_rows(const Tensor& x, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b, std::int32_t eos) {
  check_arguments("top_k_rows", x, k, eos);
  const std::int64_t rows = x.dim(0), v = x.dim(1);
  TopK out{Tensor::empty({rows, k}, DType::kF32, x.device()), Tensor::empty({rows, k}, DType::kI32, x.device()),
           Tensor::empty({rows}, DType::kF32, x.device())};
  detail::on_device(
      "top_k_rows", x,
      [&] {
        top_k_rows_cpu(x, k, skip_a, skip_b, eos, out.values.data<float>(), out.ids.data<std::int32_t>(),
                       out.eos_values.data<float>());
      },
      [&](auto stream) {
        cuda::top_k_rows(x.data<float>(), rows, v, k, skip_a, skip_b, eos, out.values.data<float>(),
                         out.ids.data<std::int32_t>(), out.eos_values.data<float>(), stream);
      });
  return out;
}

HostTopK top_k_rows_to_host(const Tensor& x, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
                            std::int32_t eos) {
  check_arguments("top_k_rows_to_host", x, k, eos);
  const std::int64_t rows = x.dim(0), v = x.dim(1);
  const auto n = static_cast<std::size_t>(rows * k);
  HostTopK out{std::vector<float>(n), std::vector<std::int32_t>(n), std::vector<float>(static_cast<std::size_t>(rows))};
  if (x.device().is_cpu()) {
    top_k_rows_cpu(x, k, skip_a, skip_b, eos, out.values.data(), out.ids.data(), out.eos_values.data());
    return out;
  }
  // One device buffer of 4-byte words: values, ids, EOS values; one copy back, one wait.
  Tensor packed = Tensor::empty({rows * (2 * k + 1)}, DType::kI32, x.device());
  detail::on_device(
      "top_k_rows_to_host", x, [] {},
      [&](auto stream) {
        std::int32_t* words = packed.data<std::int32_t>();
        cuda::top_k_rows(x.data<float>(), rows, v, k, skip_a, skip_b, eos, reinterpret_cast<float*>(words),
                         words + rows * k, reinterpret_cast<float*>(words + 2 * rows * k), stream);
      });
  const Tensor host = packed.to(Device::cpu());
  const std::int32_t* words = host.data<std::int32_t>();
  std::memcpy(out.values.data(), words, n * sizeof(float));
  std::memcpy(out.ids.data(), words + n, n * sizeof(std::int32_t));
  std::memcpy(out.eos_values.data(), words + 2 * n, static_cast<std::size_t>(rows) * sizeof(float));
  return out;
}

template <typename T>
void top_k_row(const T* row, std::int64_t v, std::int64_t k, std::int32_t skip_a, std::int32_t skip_b,
               std::vector<std::pair<double, std::int32_t>>& best) {
  cpu::top_k_row(row, v, k, skip_a, skip_b, best);
}
template void top_k_row<float>(const float*, std::int64_t, std::int64_t, std::int32_t, std::int32_t,
                               std::vector<std::pair<double, std::int32_t>>&);
template void top_k_row<double>(const double*, std::int64_t, std::int64_t, std::int32_t, std::int32_t,
                                std::vector<std::pair<double, std::int32_t>>&);

}  // namespace dragoman::ops
