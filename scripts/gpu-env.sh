#!/usr/bin/env bash
# Sourced by scripts/gpu-first-run.sh and scripts/gpu-check.sh on a GPU machine, after the bundle
# (scripts/gpu-bundle.sh) is known to be in the folder `gpu_bundle` names:
#   - its libraries unpacked (gpu_bundle/lib from gpu_bundle/lib.tar.xz), or exit 2;
#   - NCCL (linked) and cuBLASLt (opened at the first product) found wherever the machine has them
#     (the CUDA toolkit, the system's libraries, a Python environment's nvidia/*/lib in /opt or
#     /usr/local): nccl_dirs and cublas_dirs, both on LD_LIBRARY_PATH after the bundle's own;
#   - gpu_op_tags: the op-level test tags that the sanitizers run on.
# shellcheck shell=bash disable=SC2154  # gpu_bundle: set by the script that sources this one
if [[ ! -d $gpu_bundle/lib && -f $gpu_bundle/lib.tar.xz ]]; then
  tar -xJf "$gpu_bundle/lib.tar.xz" -C "$gpu_bundle" ||
    { echo "$(basename "$0"): cannot unpack $gpu_bundle/lib.tar.xz" >&2; exit 2; }
fi
gpu_library_dirs() {
  find /usr/local/cuda*/lib64 /usr/local/cuda*/lib /usr/local/cuda*/targets/*/lib /usr/lib/x86_64-linux-gnu \
    /usr/local/lib /opt -name "$1" -printf '%h\n' 2>/dev/null | sort -u | paste -sd:
}
nccl_dirs=$(gpu_library_dirs 'libnccl.so.2*')
cublas_dirs=$(gpu_library_dirs 'libcublasLt.so.*')
export LD_LIBRARY_PATH=$PWD/$gpu_bundle/lib${cublas_dirs:+:$cublas_dirs}${nccl_dirs:+:$nccl_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# shellcheck disable=SC2034  # used by the scripts that source this one
gpu_op_tags='[cast],[random],[gemm],[gather],[top_k],[linear],[cross_entropy],[elementwise],[layer_norm],[attention],[embedding],[adam]'
