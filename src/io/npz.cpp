// .npz and .npy reading (see npz.h).
#include "io/npz.h"

#include <cstring>
#include <limits>

#include "base/error.h"
#include "io/read_file.h"
#include "io/zip.h"

namespace dragoman::io {
namespace {

// The value after 'key': in a .npy header (a Python dict literal), up to the next ',' or '}' at depth 0.
std::string header_value(const std::string& header, const std::string& key, const std::string& name) {
  const std::size_t k = header.find("'" + key + "'");
  const std::size_t colon = k == std::string::npos ? k : header.find(':', k);
  if (colon == std::string::npos) throw Error(name + ": the .npy header has no '" + key + "'");
  std::size_t end = colon + 1;
  int depth = 0;
  while (end < header.size() && (depth > 0 || (header[end] != ',' && header[end] != '}'))) {
    if (header[end] == '(') ++depth;
    if (header[end] == ')') --depth;
    ++end;
  }
  std::string v = header.substr(colon + 1, end - colon - 1);
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!v.empty() && space(v.front())) v.erase(v.begin());
  while (!v.empty() && space(v.back())) v.pop_back();
  return v;
}

}  // namespace

SafeTensor decode_npy(const std::string& name, std::string_view bytes) {
  const auto fail = [&](const std::string& what) { throw Error(name + ": not a usable .npy array: " + what); };
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") fail("no .npy magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  const std::size_t prefix = major == 1 ? 10 : 12;
  if (major < 1 || major > 3 || bytes.size() < prefix) fail("version " + std::to_string(major));
  std::size_t header_size = 0;
  for (std::size_t i = prefix - 1; i >= 8; --i) header_size = (header_size << 8) | static_cast<unsigned char>(bytes[i]);
  if (header_size > bytes.size() - prefix) fail("a header past the end");
  const std::string header(bytes.substr(prefix, header_size));

  SafeTensor t;
  t.name = name;
  std::string descr = header_value(header, "descr", name);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"')) fail("descr " + descr);
  descr = descr.substr(1, descr.size() - 2);
  if (descr == "<f4") {
    t.dtype = DType::kF32;
  } else if (descr == "<f8") {
    t.dtype = DType::kF64;
  } else if (descr == "<f2") {
    t.dtype = DType::kF16;
  } else if (descr == "<i4") {
    t.dtype = DType::kI32;
  } else if (descr == "|u1" || descr == "|b1" || descr == "|S1") {
    t.dtype = DType::kU8;
  } else if (descr == "|i1") {
    t.dtype = DType::kI8;
  } else {
    fail("dtype '" + descr + "' (read: <f4, <f8, <f2, <i4, |u1, |i1, |b1, |S1)");
  }
  if (header_value(header, "fortran_order", name) != "False") fail("Fortran order");
  const std::string shape = header_value(header, "shape", name);
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') fail("shape " + shape);
  std::uint64_t elements = 1;
  std::size_t at = 1;
  while (at + 1 < shape.size()) {
    while (at + 1 < shape.size() && (shape[at] == ' ' || shape[at] == ',')) ++at;
    if (at + 1 >= shape.size()) break;
    std::size_t end = at;
    while (end + 1 < shape.size() && shape[end] >= '0' && shape[end] <= '9') ++end;
    if (end == at || end - at > 15) fail("shape " + shape);
    const auto dim = static_cast<std::int64_t>(std::stoull(shape.substr(at, end - at)));
    if (dim != 0 && elements > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(dim)) {
      fail("shape " + shape);
    }
    elements *= static_cast<std::uint64_t>(dim);
    t.shape.push_back(dim);
    at = end;
  }
  const std::string_view data = bytes.substr(prefix + header_size);
  if (elements > data.size() || elements * dtype_size(t.dtype) != data.size()) {
    fail("shape " + shape + " of " + descr + " needs " + std::to_string(elements * dtype_size(t.dtype)) +
         " bytes, the array has " + std::to_string(data.size()));
  }
  t.data.assign(data.begin(), data.end());
  return t;
}

std::vector<SafeTensor> decode_npz(const std::string& name, std::string_view bytes) {
  const ZipArchive zip(name, bytes, ".npz archive");
  std::vector<SafeTensor> tensors;
  for (const std::string& member : zip.names()) {
    std::string array = member;
    if (array.size() > 4 && array.compare(array.size() - 4, 4, ".npy") == 0) array.resize(array.size() - 4);
    tensors.push_back(decode_npy(name + ": " + member, zip.read(member)));
    tensors.back().name = array;
  }
  return tensors;
}

std::vector<SafeTensor> read_npz(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  return decode_npz(path, std::string_view(bytes.data(), bytes.size()));
}

}  // namespace dragoman::io
