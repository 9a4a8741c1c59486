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

#include "base/dtype.h"

namespace dragoman::io {

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
// The whole file, read tensor by tensor (SafeTensorsReader): at most one copy of it in memory.
SafeTensorsFile read_safetensors(const std::string& path);

// The index of the first NaN or infinity among `count` elements of F32/F64/BF16/F16 `data`, or -1
// (also for other dtypes).
std::int64_t first_non_finite(const void* data, DType dtype, std::int64_t count);

// A safetensors file read tensor by tensor: the header is read and validated when it opens (all
// that decode_safetensors checks, against the file's size), and each tensor's bytes are read on
// request straight into the caller's memory, so that a model loads without a second copy of it.
// A file that ends early is an Error naming it.
class SafeTensorsReader {
 public:
  explicit SafeTensorsReader(const std::string& path);
  ~SafeTensorsReader();
  SafeTensorsReader(const SafeTensorsReader&) = delete;
  SafeTensorsReader& operator=(const SafeTensorsReader&) = delete;

  // The metadata and the tensors' names, dtypes and shapes (their data empty), in data order.
  const SafeTensorsFile& header() const { return header_; }
  // Reads tensor i of header().tensors (numel x dtype size bytes) into `destination`.
  void read(std::size_t i, void* destination) const;

 private:
  void read_at(std::uint64_t offset, char* destination, std::size_t bytes) const;

  std::string path_;
  int fd_ = -1;
  SafeTensorsFile header_;
  std::vector<std::uint64_t> offsets_;  // each tensor's first byte in the file
};

}  // namespace dragoman::io
