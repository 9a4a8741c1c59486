#!/usr/bin/env bash
# ThreadSanitizer over the tensor-core attention kernels' CUDA source in the host emulation
# (tests/emulated_cuda/race_check.cpp): a block's threads are std::threads meeting at real barriers,
# so a barrier missing from a kernel (two threads of a block touching the same shared memory with
# none between them) is a data race that TSan reports; every report is fatal. Needs clang with its
# sanitizer runtime (scripts/install-deps.sh clang libclang-rt-dev; scripts/test-sanitizers.sh runs
# this after the ASan/UBSan suite). About 10 seconds.
#   scripts/race-check-emulated.sh [WORK_DIR]      (default build-race-check)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-build-race-check}
mkdir -p "$work"
emulated=tests/emulated_cuda
${CXX_TSAN:-clang++} -std=c++17 -O1 -g -fsanitize=thread -Wall -Wextra -Wno-unknown-pragmas \
  -I"$emulated/include" -Itests -Isrc "$emulated/race_check.cpp" "$emulated/emulated_cuda.cpp" \
  "$emulated/emulated_attention_flash.cpp" "$emulated/emulated_attention_mma.cpp" -o "$work/race_check" -lpthread
TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66} "$work/race_check"
