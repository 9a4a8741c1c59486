// NumPy's .npz archives (a ZIP file of .npy arrays, stored or deflated, ZIP64 included), as Marian
// writes its model.npz and numpy.savez / savez_compressed write theirs. Only what a reader of model
// weights needs: every array's name, dtype, shape and little-endian bytes. Everything is checked
// before it is trusted (offsets, sizes, CRC-32, the .npy header); a damaged or unsupported file is a
// dragoman::Error naming the file, the member and the problem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/safetensors.h"

namespace dragoman::io {

// The arrays of an .npz file's bytes, in archive order, as tensors (name: the member's name without
// ".npy"). dtypes: <f4 (F32), <f8 (F64), <f2 (F16), <i4 (I32), |u1 and |b1 (U8), |i1 (I8), |S1
// (U8); C order only (a Fortran-order array is refused). `name` is used in messages.
std::vector<SafeTensor> decode_npz(const std::string& name, std::string_view bytes);
std::vector<SafeTensor> read_npz(const std::string& path);

// One .npy array's bytes.
SafeTensor decode_npy(const std::string& name, std::string_view bytes);

}  // namespace dragoman::io
