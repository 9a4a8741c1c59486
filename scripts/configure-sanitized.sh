#!/usr/bin/env bash
# Configures the one sanitizer build that scripts/test-sanitizers.sh and scripts/fuzz.sh share
# (default build-sanitize/): clang, AddressSanitizer + UndefinedBehaviorSanitizer with every report
# fatal, libFuzzer's coverage in every object (-DDRAGOMAN_FUZZ=ON, which implies
# -DDRAGOMAN_SANITIZE=ON), the tests and the fuzz targets, CPU only, RelWithDebInfo. One build
# instead of two: the library is compiled once for the tests and the fuzzers (the tests' binaries
# carry the coverage counters and do not use them). Installs clang and its sanitizer runtime from
# Debian first.
#   scripts/configure-sanitized.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-sanitize}

bash scripts/install-deps.sh clang libclang-rt-dev
# CC/CXX choose the compiler of a new build directory only (DRAGOMAN_FUZZ refuses anything but clang).
CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDRAGOMAN_CUDA=OFF -DDRAGOMAN_FUZZ=ON -DDRAGOMAN_BUILD_TESTS=ON -DDRAGOMAN_BUILD_BENCH=OFF >/dev/null
