#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer and UndefinedBehaviorSanitizer: a CPU-only build with
# -DDRAGOMAN_SANITIZE=ON in BUILD_DIR (default build-asan), then `ctest -L cpu`. Every sanitizer
# report is fatal, so a test that trips one fails and prints the report. Leak checking is off: the
# libraries we link (OpenBLAS, oneDNN, ICU) keep process-lifetime allocations that LeakSanitizer
# reports. About 3 times the normal test time; docs/RELIABILITY.md has the last result.
#   scripts/test-sanitizers.sh [BUILD_DIR]     (JOBS=N for the build and ctest, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
jobs=${JOBS:-2}
# A build with debug information (-g) is cached by ccache under its directory's path unless told
# otherwise: without it, another checkout (a clean clone for CI) compiles everything again. The cost
# is that a cached object's debug information names the directory it was first compiled in.
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDRAGOMAN_CUDA=OFF -DDRAGOMAN_SANITIZE=ON \
  -DDRAGOMAN_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$jobs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
ctest -L cpu --output-on-failure -j "$jobs" --timeout 1800
