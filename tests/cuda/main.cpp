// Catch2's main for the GPU tests: without a CUDA device the whole executable exits 77, which
// ctest reports as skipped (SKIP_RETURN_CODE), not failed. Listing the tests (--list-tests,
// --list-test-names-only, --list-tags) needs no device.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "device/cuda/runtime_info.h"

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::string(argv[i]).rfind("--list", 0) == 0;
  if (!listing && dragoman::cuda::device_count() == 0) {
    std::printf("no CUDA device (%s): skipping the cuda tests\n", dragoman::cuda::no_device_reason().c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
