// safetensors encoding and validated decoding (see safetensors.h).
#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/atomic_file.h"

namespace dragoman::io {
namespace {

// The reference implementation refuses headers over 100 MB; so do we.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

[[noreturn]] void corrupt(const std::string& name, const std::string& what) {
  throw Error(name + ": not a valid safetensors file: " + what);
}

// Product of the shape's dimensions times the element size, or false on overflow.
bool byte_size(const std::vector<std::int64_t>& shape, DType dtype, std::uint64_t& bytes) {
  std::uint64_t n = dtype_size(dtype);
  for (std::int64_t d : shape) {
    if (d < 0) return false;
    const auto ud = static_cast<std::uint64_t>(d);
    if (ud != 0 && n > std::numeric_limits<std::uint64_t>::max() / ud) return false;
    n *= ud;
  }
  bytes = n;
  return true;
}

}  // namespace

std::int64_t SafeTensor::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

namespace {

template <typename T>
std::int64_t first_non_finite_of(const unsigned char* bytes, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, bytes + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    if (!std::isfinite(value)) return i;
  }
  return -1;
}

// 16-bit floats: all exponent bits set is infinity or NaN.
std::int64_t first_non_finite_16(const unsigned char* bytes, std::int64_t n, std::uint16_t exponent_mask) {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, bytes + 2 * i, 2);
    if ((bits & exponent_mask) == exponent_mask) return i;
  }
  return -1;
}

}  // namespace

std::int64_t first_non_finite(const void* data, DType dtype, std::int64_t count) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  switch (dtype) {
    case DType::kF32: return first_non_finite_of<float>(bytes, count);
    case DType::kF64: return first_non_finite_of<double>(bytes, count);
    case DType::kBF16: return first_non_finite_16(bytes, count, 0x7F80u);
    case DType::kF16: return first_non_finite_16(bytes, count, 0x7C00u);
    default: return -1;
  }
}

std::int64_t SafeTensor::first_non_finite() const {
  return io::first_non_finite(data.data(), dtype, static_cast<std::int64_t>(data.size() / dtype_size(dtype)));
}

const SafeTensor* SafeTensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string encode_safetensors(const SafeTensorsFile& file) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const auto& t : file.tensors) {
    if (t.name == "__metadata__" || !names.insert(t.name).second) {
      throw Error("safetensors: tensor name '" + t.name + "' is reserved or used twice");
    }
    std::uint64_t bytes = 0;
    if (!byte_size(t.shape, t.dtype, bytes) || bytes != t.data.size()) {
      throw Error("safetensors: tensor '" + t.name + "' has " + std::to_string(t.data.size()) +
                  " bytes of data, its shape and dtype say otherwise");
    }
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  std::string out;
  out.reserve(8 + json.size() + offset);
  const std::uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  out += json;
  for (const auto& t : file.tensors) out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

namespace {

// The header length of a file whose first bytes are `head` (at least 8 of them) and that has
// `file_size` bytes, checked against the file.
std::uint64_t header_length(const std::string& name, std::string_view head, std::uint64_t file_size) {
  if (file_size < 8) corrupt(name, "only " + std::to_string(file_size) + " bytes, expected an 8-byte header length");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i)
    header_len = (header_len << 8) | static_cast<unsigned char>(head[static_cast<std::size_t>(i)]);
  if (header_len > kMaxHeaderBytes) corrupt(name, "header length " + std::to_string(header_len) + " is too large");
  if (header_len > file_size - 8) {
    corrupt(name, "header length " + std::to_string(header_len) + " exceeds the file (" + std::to_string(file_size) +
                      " bytes): truncated?");
  }
  return header_len;
}

// Parses and validates the header at the start of `head` (8 + its length bytes at least) for a file
// of `file_size` bytes. With `data` (the whole file) each tensor's bytes are copied; without, they
// are left empty and `file_offsets` gets each tensor's position in the file (in file.tensors' order).
SafeTensorsFile parse_safetensors(const std::string& name, std::string_view head, std::uint64_t file_size,
                                  const char* data, std::vector<std::uint64_t>* file_offsets) {
  const std::uint64_t header_len = header_length(name, head, file_size);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(head.begin() + 8, head.begin() + 8 + static_cast<std::ptrdiff_t>(header_len));
  } catch (const nlohmann::json::exception& e) {
    corrupt(name, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) corrupt(name, "header is not a JSON object");

  const std::uint64_t data_begin = 8 + header_len;
  const std::uint64_t data_size = file_size - data_begin;
  SafeTensorsFile file;
  struct Span {
    std::uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) corrupt(name, "__metadata__ is not an object");
      for (const auto& [mkey, mvalue] : value.items()) {
        if (!mvalue.is_string()) corrupt(name, "__metadata__ value of '" + mkey + "' is not a string");
        file.metadata[mkey] = mvalue.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + key + "'";
    if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") || !value.contains("data_offsets")) {
      corrupt(name, where + " lacks dtype, shape or data_offsets");
    }
    SafeTensor t;
    t.name = key;
    const auto& dtype = value.at("dtype");
    if (!dtype.is_string() || !parse_dtype(dtype.get<std::string>(), t.dtype)) {
      corrupt(name, where + " has unsupported dtype " + dtype.dump() + " (expected F32, F64, I32, BF16, F16 or U8)");
    }
    const auto& shape = value.at("shape");
    if (!shape.is_array()) corrupt(name, where + " has a shape that is not a list");
    for (const auto& d : shape) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
        corrupt(name, where + " has an invalid dimension " + d.dump());
      t.shape.push_back(d.get<std::int64_t>());
    }
    const auto& offsets = value.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      corrupt(name, where + " has data_offsets that are not two non-negative integers");
    }
    const auto begin = offsets[0].get<std::uint64_t>();
    const auto end = offsets[1].get<std::uint64_t>();
    std::uint64_t expected = 0;
    if (!byte_size(t.shape, t.dtype, expected)) corrupt(name, where + " has a shape too large");
    if (end < begin || end - begin != expected) {
      corrupt(name, where + " has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] for " +
                        std::to_string(expected) + " bytes of " + dtype_name(t.dtype) + " data");
    }
    if (end > data_size) {
      corrupt(name, where + " ends at data byte " + std::to_string(end) + " but the file has " +
                        std::to_string(data_size) + " bytes of data: truncated?");
    }
    if (data != nullptr) {
      const char* src = data + data_begin + begin;
      t.data.assign(src, src + (end - begin));
    }
    spans.push_back({begin, end, key});
    file.tensors.push_back(std::move(t));
  }
  // No two tensors may share bytes (an empty tensor shares none, wherever its offsets point).
  std::vector<std::size_t> order(spans.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(spans[a].begin, spans[a].end) < std::tie(spans[b].begin, spans[b].end);
  });
  const Span* prev = nullptr;
  for (std::size_t i : order) {
    const Span& cur = spans[i];
    if (cur.begin == cur.end) continue;
    if (prev != nullptr && cur.begin < prev->end)
      corrupt(name, "tensors '" + prev->name + "' and '" + cur.name + "' overlap");
    prev = &cur;
  }
  std::vector<SafeTensor> sorted;
  sorted.reserve(order.size());
  for (std::size_t i : order) {
    sorted.push_back(std::move(file.tensors[i]));
    if (file_offsets != nullptr) file_offsets->push_back(data_begin + spans[i].begin);
  }
  file.tensors = std::move(sorted);
  return file;
}

}  // namespace

SafeTensorsFile decode_safetensors(const std::string& name, std::string_view bytes) {
  return parse_safetensors(name, bytes, bytes.size(), bytes.data(), nullptr);
}

SafeTensorsReader::SafeTensorsReader(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw Error("cannot read " + path + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw Error("cannot open " + path + ": it is a directory");
    const auto file_size = static_cast<std::uint64_t>(st.st_size);
    std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(file_size, 8)), '\0');
    read_at(0, head.data(), head.size());
    const std::uint64_t header_len = header_length(path, head, file_size);
    head.resize(static_cast<std::size_t>(8 + header_len));
    read_at(8, head.data() + 8, static_cast<std::size_t>(header_len));
    header_ = parse_safetensors(path, head, file_size, nullptr, &offsets_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

SafeTensorsReader::~SafeTensorsReader() { ::close(fd_); }

void SafeTensorsReader::read_at(std::uint64_t offset, char* destination, std::size_t bytes) const {
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd_, destination + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read " + path_ + ": " + std::strerror(errno));
    if (n == 0)
      corrupt(path_, "the file ended at byte " + std::to_string(offset + done) + " while reading: truncated?");
    done += static_cast<std::size_t>(n);
  }
}

void SafeTensorsReader::read(std::size_t i, void* destination) const {
  const SafeTensor& t = header_.tensors.at(i);
  std::uint64_t bytes = 0;
  byte_size(t.shape, t.dtype, bytes);
  read_at(offsets_[i], static_cast<char*>(destination), static_cast<std::size_t>(bytes));
}

void write_safetensors(const std::string& path, const SafeTensorsFile& file) {
  write_file_atomically(path, encode_safetensors(file));
}

SafeTensorsFile read_safetensors(const std::string& path) {
  // Tensor by tensor into their own buffers: the file is never held twice.
  const SafeTensorsReader reader(path);
  SafeTensorsFile file = reader.header();
  for (std::size_t i = 0; i < file.tensors.size(); ++i) {
    SafeTensor& t = file.tensors[i];
    t.data.resize(static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype));
    reader.read(i, t.data.data());
  }
  return file;
}

}  // namespace dragoman::io
