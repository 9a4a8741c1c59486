// Strided copies on a device, the twin of copy_strided in core/strided_copy.h: same arguments plus
// a stream, same result. For views that no plain or pitched copy (device/cuda/memory.h) can do:
// a transposed tensor made contiguous, a strided view written into another.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/cuda/stream.h"

namespace dragoman::cuda {

// Dimensions after collapsing (core/strided_copy.h's collapse_copy) that one launch handles.
inline constexpr int kMaxCopyRank = 8;

// src, dst: device memory of the stream's device (the caller holds its DeviceGuard); strides in
// elements; elem_bytes 1, 2, 4 or 8; rank <= kMaxCopyRank (dragoman::Error otherwise). One thread
// per element, asynchronous on `stream`.
void copy_strided(const void* src, const std::int64_t* src_strides, void* dst, const std::int64_t* dst_strides,
                  const std::int64_t* shape, int rank, std::size_t elem_bytes, Stream stream);

}  // namespace dragoman::cuda
