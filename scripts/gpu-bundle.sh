#!/usr/bin/env bash
# Prepares a GPU run on a machine that has the NVIDIA driver and CUDA toolkit but none of our
# Debian libraries: builds with CUDA for the given architectures (default 90, H100/H200) in
# build-gpu/, then copies the binaries and the non-CUDA shared libraries they need (ICU, spdlog,
# fmt, ...) into .gpu/ (git-ignored; the libraries compressed, .gpu/lib.tar.xz: about 55 MB in all),
# and fails when the tree and .gpu/ together pass the 64 MiB a device session carries.
# On the GPU machine scripts/gpu-check.sh does everything; by hand:
#   tar -xJf .gpu/lib.tar.xz -C .gpu
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
# What the GPU scripts run (not the CPU suite, dragoman_tests: 16 MB that the 64 MiB could not spare).
binaries=(build-gpu/src/dragoman build-gpu/tests/dragoman_cuda_tests build-gpu/bench/model_bench)
cp "${binaries[@]}" .gpu/
# Every resolved library except glibc/libstdc++ (present everywhere) and the CUDA toolkit's own
# (libcudart, libcublas*, libnccl: the GPU machine has its own, matching its driver).
ldd "${binaries[@]}" | awk '/=> \// { print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64|libpthread|libdl|librt)\.so' |
  grep -v -E '/(libcudart|libcublas|libcublasLt|libnccl)\.so' |
  while read -r lib; do cp -L "$lib" .gpu/lib/; done
# The translation benchmark's data (scripts/bench-translate-gpu.sh), when the bench corpus is here:
# the first 1,000 dev lines, 2,000 training pairs (for the one update that makes a model) and a
# 37,000-piece BPE vocabulary built on the corpus (cached in build-gpu/, about 2 minutes to build).
bench_data=${BENCH_DATA:-../shared/data/bench-en-de}
if [[ -f $bench_data/train.en.xz ]]; then
  mkdir -p .gpu/bench
  # (sed reads to the end: head would stop xz with SIGPIPE, fatal under pipefail)
  xz -dc "$bench_data/dev.en.xz" | sed -n '1,1000p' >.gpu/bench/dev.en
  xz -dc "$bench_data/train.en.xz" | sed -n '1,2000p' >.gpu/bench/small.en
  xz -dc "$bench_data/train.de.xz" | sed -n '1,2000p' >.gpu/bench/small.de
  if [[ ! -s build-gpu/bench-vocab/vocab.model ]]; then
    mkdir -p build-gpu/bench-vocab
    xz -dc "$bench_data/train.en.xz" >build-gpu/bench-vocab/train.en
    xz -dc "$bench_data/train.de.xz" >build-gpu/bench-vocab/train.de
    build-gpu/src/dragoman build-vocab --input build-gpu/bench-vocab/train.en build-gpu/bench-vocab/train.de \
      --vocab-size 37000 --input-sentence-size 200000 --output build-gpu/bench-vocab/vocab
  fi
  cp build-gpu/bench-vocab/vocab.model .gpu/bench/
else
  echo "gpu-bundle: $bench_data not found: no data for scripts/bench-translate-gpu.sh"
fi
# The PyTorch reference of the training step (scripts/gpu-first-run.sh's 4-torch-ref): ../shared is
# not on the GPU machine.
torch_reference=${TORCH_REFERENCE:-../shared/bench/torch_reference.py}
if [[ -f $torch_reference ]]; then
  cp "$torch_reference" .gpu/
else
  echo "gpu-bundle: $torch_reference not found: the first run's 4-torch-ref step will fail"
fi
# The libraries travel compressed (ICU's data and OpenBLAS alone are 65 MB; a device session
# carries at most 64 MiB): .gpu/lib.tar.xz, unpacked into .gpu/lib/ by scripts/gpu-check.sh (or
# `tar -xJf .gpu/lib.tar.xz -C .gpu`) on the GPU machine.
ls .gpu/lib
tar -cJf .gpu/lib.tar.xz -C .gpu lib
rm -rf .gpu/lib
du -sh .gpu
ls -l .gpu
# A device session carries the working tree (tracked and untracked files that git does not ignore)
# plus .gpu/, 64 MiB in all; a larger one is refused at the first call, costing the GPU's minutes.
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null |
  awk '{ n += $1 } END { print n + 0 }')
bundle_bytes=$(du -sb .gpu | cut -f1)
limit=$((64 * 1024 * 1024))
echo "gpu-bundle: the tree $((tree_bytes / 1048576)) MiB + .gpu/ $((bundle_bytes / 1048576)) MiB of the 64 MiB a device session carries"
if ((tree_bytes + bundle_bytes > limit)); then
  echo "gpu-bundle: over the 64 MiB a device session carries: leave something out of .gpu/" >&2
  exit 1
fi
