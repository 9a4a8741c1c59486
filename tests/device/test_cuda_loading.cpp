// A CUDA build loads cuBLAS only when it is used (device/cuda/cublas_loader.cpp): CPU
// work does not map libcublasLt (whose start-up makes about 200 MB resident), and the first call
// loads it. A CPU-only build has no cuBLAS to load and says so. Each test case runs in a process
// of its own (catch_discover_tests), so nothing earlier has loaded the library.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "device/cuda/runtime_info.h"
#include "device/device.h"
#include "ops/build_info.h"

namespace dragoman {
namespace {

bool mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(library) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("cuBLAS is loaded on first use, not at start-up", "[kernels]") {
  // --version's text (with no device here) must not load it either.
  const std::string info = ops::build_info();
  CHECK_FALSE(mapped("libcublasLt.so"));
  CHECK_FALSE(mapped("libcublas.so"));
  if constexpr (kWithCuda) {
    CHECK(info.find("loaded when a CUDA device is used") != std::string::npos);
    const std::string version = cuda::cublas_version();
    CHECK(version.find('.') != std::string::npos);
    CHECK(mapped("libcublasLt.so"));
  } else {
    CHECK(info.find("CUDA: no (CPU-only build)") != std::string::npos);
  }
}

}  // namespace dragoman
