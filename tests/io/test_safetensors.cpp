// safetensors: bit-exact round trips, a file written by Python's safetensors, and clear errors for
// truncated and corrupted files (made from that file byte by byte).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "eval/fixtures.h"
#include "io/safetensors.h"
#include "train/train_testing.h"

using namespace dragoman;
using namespace dragoman::io;

namespace {

template <typename T>
SafeTensor make_tensor(const std::string& name, DType dtype, std::vector<std::int64_t> shape, const std::vector<T>& v) {
  SafeTensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.resize(v.size() * sizeof(T));
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

template <typename T>
std::vector<T> values(const SafeTensor& t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The header length field rewritten to n.
std::string with_header_length(std::string bytes, std::uint64_t n) {
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return bytes;
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const std::size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

// The damaged variants of the good fixture `good` and the error each must give, whatever reads
// them: `error_of(bytes)` is the message of reading those bytes as bad.safetensors.
void check_corruption_errors(const std::string& good, const std::function<std::string(const std::string&)>& error_of) {
  using Catch::Contains;
  CHECK_THAT(error_of(""), Contains("bad.safetensors: not a valid safetensors file: only 0 bytes"));
  CHECK_THAT(error_of(good.substr(0, 5)), Contains("only 5 bytes"));
  CHECK_THAT(error_of(good.substr(0, 60)), Contains("exceeds the file") && Contains("truncated?"));
  CHECK_THAT(error_of(good.substr(0, good.size() - 3)), Contains("bad.safetensors") && Contains("truncated?"));
  CHECK_THAT(error_of(with_header_length(good, std::uint64_t{1} << 40)), Contains("too large"));
  CHECK_THAT(error_of(replace_once(good, "\"dtype\":\"F64\"", "\"dtype\":\"F99\"")), Contains("unsupported dtype"));
  CHECK_THAT(error_of(replace_once(good, "{\"__metadata__\"", "[\"__metadata__\"")), Contains("not valid JSON"));
  CHECK_THAT(error_of(replace_once(good, "[0,24]", "[0,23]")), Contains("'decoder.bias'") && Contains("24 bytes"));
  CHECK_THAT(error_of(replace_once(good, "\"shape\":[3]", "\"shape\":[-3]")), Contains("invalid dimension"));
  // Two tensors over the same bytes: point encoder.weight's 24 bytes at decoder.bias's.
  CHECK_THAT(error_of(replace_once(good, "[24,48]", "[0,24] ")), Contains("overlap"));
}

}  // namespace

TEST_CASE("safetensors round-trips bit-exactly through an atomic write", "[safetensors]") {
  SafeTensorsFile file;
  file.metadata["format_version"] = "1";
  file.metadata["config"] = "{\"d_model\": 512}";
  file.tensors.push_back(make_tensor<float>("w", DType::kF32, {2, 2}, {1.0f, -0.0f, 3.4028235e38f, 1e-45f}));
  file.tensors.push_back(make_tensor<double>("g", DType::kF64, {3}, {0.1, -1e308, 5e-324}));
  file.tensors.push_back(make_tensor<std::int32_t>("ids", DType::kI32, {1, 1}, {-7}));
  file.tensors.push_back(make_tensor<unsigned char>("spm", DType::kU8, {3}, {0, 255, 10}));
  const std::string path = "test_safetensors_roundtrip.safetensors";
  write_safetensors(path, file);
  const SafeTensorsFile back = read_safetensors(path);
  const std::string bytes = read_bytes(path);
  std::remove(path.c_str());

  CHECK(back.metadata == file.metadata);
  REQUIRE(back.tensors.size() == file.tensors.size());
  for (std::size_t i = 0; i < file.tensors.size(); ++i) {
    CHECK(back.tensors[i].name == file.tensors[i].name);
    CHECK(back.tensors[i].dtype == file.tensors[i].dtype);
    CHECK(back.tensors[i].shape == file.tensors[i].shape);
    CHECK(back.tensors[i].data == file.tensors[i].data);
  }
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i)
    header_len = (header_len << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  CHECK((8 + header_len) % 8 == 0);  // data 8-byte aligned
}

TEST_CASE("a file written by Python's safetensors loads with its values", "[safetensors]") {
  const SafeTensorsFile f = read_safetensors(test::fixture_path("safetensors/python.safetensors"));
  CHECK(f.metadata.at("step") == "42");
  CHECK(f.metadata.at("config") == "{\"d_model\": 16}");
  REQUIRE(f.find("encoder.weight") != nullptr);
  CHECK(f.find("encoder.weight")->shape == std::vector<std::int64_t>{2, 3});
  CHECK(values<float>(*f.find("encoder.weight")) == std::vector<float>{0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f});
  CHECK(values<double>(*f.find("decoder.bias")) == std::vector<double>{1e-300, -2.5, 3.25});
  CHECK(values<std::int32_t>(*f.find("ids")) == std::vector<std::int32_t>{1, -2, 3, 2147483647});
  CHECK(values<unsigned char>(*f.find("vocab")) == std::vector<unsigned char>{'s', 'p', 'm', 0, 255});
  CHECK(f.find("half")->dtype == DType::kF16);
  CHECK(values<std::uint16_t>(*f.find("half")) == std::vector<std::uint16_t>{0x3C00, 0xB800, 0x7BFF});
  CHECK(f.find("scalar")->shape.empty());
  CHECK(f.find("scalar")->numel() == 1);
  CHECK(f.find("empty")->numel() == 0);
  CHECK(f.find("missing") == nullptr);
}

TEST_CASE("truncated and corrupted files are clear errors", "[safetensors]") {
  const std::string good = read_bytes(test::fixture_path("safetensors/python.safetensors"));
  REQUIRE(good.size() > 100);
  const auto error_of = [](const std::string& bytes) {
    try {
      decode_safetensors("bad.safetensors", bytes);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  check_corruption_errors(good, error_of);
}

TEST_CASE("read_safetensors and SafeTensorsReader read files tensor by tensor, with the same checks", "[safetensors]") {
  const std::string dir = test::scratch_dir("safetensors-reader");
  const std::string good_path = test::fixture_path("safetensors/python.safetensors");
  const std::string good = read_bytes(good_path);
  // The same tensors as decoding the whole file in memory, bit for bit.
  const SafeTensorsFile expected = decode_safetensors(good_path, good);
  const SafeTensorsFile got = read_safetensors(good_path);
  CHECK(got.metadata == expected.metadata);
  REQUIRE(got.tensors.size() == expected.tensors.size());
  const SafeTensorsReader reader(good_path);
  CHECK(reader.header().metadata == expected.metadata);
  for (std::size_t i = 0; i < got.tensors.size(); ++i) {
    INFO(expected.tensors[i].name);
    CHECK(got.tensors[i].name == expected.tensors[i].name);
    CHECK(got.tensors[i].shape == expected.tensors[i].shape);
    CHECK(got.tensors[i].data == expected.tensors[i].data);
    CHECK(reader.header().tensors[i].data.empty());  // the header only
    std::vector<unsigned char> one(expected.tensors[i].data.size());
    reader.read(i, one.data());
    CHECK(one == expected.tensors[i].data);
  }
  // Damaged files: every error decoding in memory gives, naming the file.
  const auto error_of = [&](const std::string& bytes) {
    const std::string path = dir + "/bad.safetensors";
    std::ofstream(path, std::ios::binary) << bytes;
    try {
      read_safetensors(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  check_corruption_errors(good, error_of);
  using Catch::Contains;
  CHECK_THROWS_WITH(read_safetensors(dir + "/missing.safetensors"), Contains("cannot open") && Contains("missing"));
  CHECK_THROWS_WITH(read_safetensors(dir), Contains("it is a directory"));
  // The values' checks, on any memory.
  const std::vector<float> finite = {1.0f, 2.0f, -3.0f};
  const std::vector<float> with_nan = {1.0f, 2.0f, std::nanf(""), 4.0f};
  CHECK(first_non_finite(finite.data(), DType::kF32, 3) == -1);
  CHECK(first_non_finite(with_nan.data(), DType::kF32, 4) == 2);
}

TEST_CASE("encoding refuses inconsistent tensors", "[safetensors]") {
  using Catch::Contains;
  SafeTensorsFile file;
  file.tensors.push_back(make_tensor<float>("w", DType::kF32, {3}, {1.0f, 2.0f}));
  CHECK_THROWS_WITH(encode_safetensors(file), Contains("'w' has 8 bytes"));
  file.tensors[0] = make_tensor<float>("w", DType::kF32, {2}, {1.0f, 2.0f});
  file.tensors.push_back(file.tensors[0]);
  CHECK_THROWS_WITH(encode_safetensors(file), Contains("used twice"));
}

TEST_CASE("an atomic write that fails leaves the old file untouched and no temporary file", "[safetensors]") {
  using Catch::Contains;
  const std::string path = "test_safetensors_keep.safetensors";
  SafeTensorsFile file;
  file.tensors.push_back(make_tensor<float>("w", DType::kF32, {1}, {1.0f}));
  write_safetensors(path, file);
  const std::string before = read_bytes(path);
  SafeTensorsFile bad = file;
  bad.tensors.push_back(make_tensor<float>("bad", DType::kF32, {5}, {1.0f}));  // refused before writing
  CHECK_THROWS_AS(write_safetensors(path, bad), Error);
  CHECK(read_bytes(path) == before);
  std::remove(path.c_str());

  // A directory stands where the file should go: refused before anything is written. (A rename
  // that fails at the end, the directory appearing meanwhile, is tested on AtomicFileWriter in
  // test_line_reader.cpp.)
  const std::string dir = "test_safetensors_dir.safetensors";
  REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  CHECK_THROWS_WITH(write_safetensors(dir, file), Contains("cannot write " + dir) && Contains("it is a directory"));
  CHECK(::access((dir + ".tmp." + std::to_string(::getpid())).c_str(), F_OK) != 0);  // none made
  ::rmdir(dir.c_str());
  CHECK_THROWS_WITH(write_safetensors("/nonexistent-dir/x.safetensors", file),
                    Contains("directory /nonexistent-dir does not exist"));
}
