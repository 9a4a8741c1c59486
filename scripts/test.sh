#!/usr/bin/env bash
# Builds Dragoman and runs its test suite: installs the Debian dependencies (scripts/install-deps.sh),
# configures (CUDA when nvcc is found), builds with 2 jobs and runs ctest.
#   BUILD_DIR=build (default)   DRAGOMAN_CMAKE_ARGS="-DDRAGOMAN_CUDA=OFF"   JOBS=2 (default)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-2}
# shellcheck disable=SC2086  # DRAGOMAN_CMAKE_ARGS is a list of arguments
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release ${DRAGOMAN_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs"
cd "$build_dir"
ctest --output-on-failure -j "$jobs"
