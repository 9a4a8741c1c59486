// The .npz reader (io/npz.h) on archives numpy wrote (tests/fixtures/marian: np.savez, stored, and
// np.savez_compressed, deflated; both ZIP64 members as numpy writes them): names, dtypes, shapes
// and values; then damaged archives are errors naming the file and the member, never a crash.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/half.h"
#include "io/npz.h"
#include "io/read_file.h"

namespace dragoman::io {
namespace {

const std::filesystem::path kDir = std::filesystem::path(DRAGOMAN_TEST_FIXTURES) / "marian";

template <typename T>
std::vector<T> values(const SafeTensor& t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

std::string bytes_of(const std::string& file) {
  const std::vector<char> b = read_file((kDir / file).string());
  return {b.begin(), b.end()};
}

}  // namespace

TEST_CASE("npz: numpy's stored and deflated archives give their arrays", "[io]") {
  for (const char* file : {"arrays.npz", "arrays-compressed.npz"}) {
    INFO(file);
    const std::vector<SafeTensor> arrays = read_npz((kDir / file).string());
    REQUIRE(arrays.size() == 5);
    CHECK(arrays[0].name == "a");
    CHECK(arrays[0].dtype == DType::kF32);
    CHECK(arrays[0].shape == std::vector<std::int64_t>{2, 3});
    CHECK(values<float>(arrays[0]) == std::vector<float>{0, 1, 2, 3, 4, 5});
    CHECK(arrays[1].dtype == DType::kF16);
    CHECK(arrays[1].shape == std::vector<std::int64_t>{4});
    const std::vector<f16> b = values<f16>(arrays[1]);
    CHECK(b[3].to_float() == 0.75f);
    CHECK(arrays[2].dtype == DType::kI8);
    CHECK(values<std::int8_t>(arrays[2]) == std::vector<std::int8_t>{-1, 2, -3});
    CHECK(arrays[3].dtype == DType::kF64);
    CHECK(arrays[3].shape.empty());
    CHECK(values<double>(arrays[3]) == std::vector<double>{2.5});
    CHECK(arrays[4].shape == std::vector<std::int64_t>{0, 3});
    CHECK(arrays[4].data.empty());
  }
}

TEST_CASE("npz: damaged archives are errors naming the file", "[io]") {
  const std::string stored = bytes_of("arrays.npz"), deflated = bytes_of("arrays-compressed.npz");
  // Every truncation and every single-byte change of both archives: an Error or the same arrays'
  // count (a change in a field that is not checked, e.g. a timestamp), never anything else.
  for (const std::string* archive : {&stored, &deflated}) {
    for (std::size_t n = 0; n < archive->size(); n += 7) {
      CHECK_THROWS_AS(decode_npz("cut.npz", std::string_view(archive->data(), n)), Error);
    }
    int errors = 0;
    for (std::size_t i = 0; i < archive->size(); ++i) {
      std::string changed = *archive;
      changed[i] = static_cast<char>(changed[i] ^ 0x5a);
      std::size_t arrays = 0;
      std::string message;
      try {
        arrays = decode_npz("changed.npz", changed).size();
      } catch (const Error& e) {
        message = e.what();
      }
      if (message.empty()) {
        CHECK(arrays == 5);
      } else {
        ++errors;
        CHECK_THAT(message, Catch::Contains("changed.npz"));
      }
    }
    CHECK(errors > static_cast<int>(archive->size() / 2));  // data bytes are caught by CRC-32
  }
  CHECK_THROWS_WITH(decode_npz("x.npz", "not a zip file at all, long enough to search"),
                    Catch::Contains("x.npz") && Catch::Contains("no end-of-directory record"));
}

TEST_CASE("npy: headers are parsed and checked", "[io]") {
  const auto npy = [](const std::string& header, const std::string& data) {
    std::string h = header;
    while ((10 + h.size() + 1) % 64 != 0) h += ' ';
    h += '\n';
    std::string out = std::string("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(h.size() & 0xff);
    out += static_cast<char>(h.size() >> 8);
    return out + h + data;
  };
  const std::string four_floats(16, '\0');
  CHECK(decode_npy("x", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", four_floats)).shape ==
        std::vector<std::int64_t>{2, 2});
  CHECK_THROWS_WITH(decode_npy("x", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four_floats)),
                    Catch::Contains("Fortran"));
  CHECK_THROWS_WITH(decode_npy("x", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", four_floats)),
                    Catch::Contains("dtype '>f4'"));
  CHECK_THROWS_WITH(decode_npy("x", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four_floats)),
                    Catch::Contains("needs 20 bytes"));
  CHECK_THROWS_WITH(
      decode_npy("x", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999,), }", four_floats)),
      Catch::Contains("shape"));
}

}  // namespace dragoman::io
