// safetensors files (the format Python's `safetensors` and numpy read): an 8-byte little-endian
// header length N, N bytes of JSON header, then the raw little-endian tensor data. The header maps
// each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// data), plus an optional "__metadata__" object of string values. Checkpoints are such files.
//
// Reading validates everything before trusting it: header length within the file, JSON well
// formed, known dtypes, non-negative shapes whose byte size matches the offsets, offsets in
// bounds and not overlapping. A truncated or corrupted file is a dragoman::Error naming the file
// and what was wrong, never a crash or an out-of-bounds read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace dragoman {

struct SafeTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> data;  // element count * dtype_size bytes, little-endian

  std::int64_t numel() const;
  // The index of the first NaN or infinity of an F32/F64/BF16/F16 tensor, or -1 (also for other dtypes).
  std::int64_t first_non_finite() const;
};

struct SafeTensorsFile {
  std::map<std::string, std::string> metadata;  // "__metadata__"
  std::vector<SafeTensor> tensors;              // in the order of their data offsets

  // The tensor of that name, or nullptr.
  const SafeTensor* find(const std::string& name) const;
};

// The bytes of a safetensors file: tensors in the given order, header padded with spaces so the
// data starts at a multiple of 8 bytes. Names must be unique and not "__metadata__".
std::string encode_safetensors(const SafeTensorsFile& file);

// Parses and validates bytes; `name` is used in error messages.
SafeTensorsFile decode_safetensors(const std::string& name, std::string_view bytes);

// encode + write_file_atomically.
void write_safetensors(const std::string& path, const SafeTensorsFile& file);
SafeTensorsFile read_safetensors(const std::string& path);

}  // namespace dragoman
