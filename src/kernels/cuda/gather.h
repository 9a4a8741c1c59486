// The twins of kernels/cpu/gather.h on CUDA: every row in one launch (a beam search step
// reorders the keys and values of every layer with one kernel each, not one copy per row). rows
// is device memory; the bytes are copied in 4-byte words where every size and stride allows, else
// in 2-byte ones, else bytes. Asynchronous on `stream`. Plain C++ header; CPU-only builds link stubs.
#pragma once

#include <cstdint>

#include "device/cuda/stream.h"

namespace dragoman::cuda {

void gather_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                         const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes, Stream stream);
void scatter_row_prefixes(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                          const std::int32_t* rows, std::int64_t count, std::int64_t row_bytes, Stream stream);

}  // namespace dragoman::cuda
