#!/usr/bin/env bash
# Prepares a GPU run on a machine that has the NVIDIA driver and CUDA toolkit but none of our
# Debian libraries: builds with CUDA for the given architectures (default 90, H100/H200) in
# build-gpu/, then copies the binaries and the non-CUDA shared libraries they need (ICU, spdlog,
# fmt, ...) into .gpu/ (git-ignored). On the GPU machine:
#   export LD_LIBRARY_PATH=$PWD/.gpu/lib:$LD_LIBRARY_PATH   # plus where its CUDA/NCCL libraries are
#   .gpu/dragoman --version && .gpu/dragoman_cuda_tests
set -euo pipefail
cd "$(dirname "$0")/.."
archs=${1:-90}
# Without oneDNN: its 40 MB library would not fit the 64 MiB a GPU session may carry, and the CPU's
# matrix products do not matter there (OpenBLAS does them).
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDRAGOMAN_CUDA=ON -DDRAGOMAN_CUDA_ARCHS="$archs" \
  -DDRAGOMAN_ONEDNN=OFF >/dev/null
cmake --build build-gpu -j "${JOBS:-2}"
rm -rf .gpu
mkdir -p .gpu/lib
binaries=(build-gpu/src/dragoman build-gpu/tests/dragoman_tests build-gpu/tests/dragoman_cuda_tests
  build-gpu/bench/model_bench)
cp "${binaries[@]}" .gpu/
# Every resolved library except glibc/libstdc++ (present everywhere) and the CUDA toolkit's own
# (libcudart, libcublas*, libnccl: the GPU machine has its own, matching its driver).
ldd "${binaries[@]}" | awk '/=> \// { print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64|libpthread|libdl|librt)\.so' |
  grep -v -E '/(libcudart|libcublas|libcublasLt|libnccl)\.so' |
  while read -r lib; do cp -L "$lib" .gpu/lib/; done
du -sh .gpu
ls .gpu .gpu/lib
