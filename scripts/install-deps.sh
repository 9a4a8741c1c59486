#!/usr/bin/env bash
# Installs Dragoman's build and test dependencies from Debian packages, idempotently.
# The CUDA toolkit (nvcc, cuBLAS, cuBLASLt, NCCL) is expected at /usr/local/cuda and is not installed
# here; without it the build is CPU-only (DRAGOMAN_CUDA=AUTO). Arguments are more packages, for a
# script that needs them (scripts/fuzz.sh: clang and libFuzzer's runtime).
#   scripts/install-deps.sh [PACKAGE...]
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git xz-utils
  libcli11-dev libspdlog-dev libfmt-dev libyaml-cpp-dev
  libsentencepiece-dev sentencepiece
  catch2 libopenblas-dev libopenblas-openmp-dev libdnnl-dev ocl-icd-opencl-dev nlohmann-json3-dev
  libopenmpi-dev openmpi-bin
  libicu-dev zlib1g-dev
  libcpp-httplib-dev
  python3 python3-venv python3-dev pybind11-dev python3-pytest curl
  librsvg2-bin
  trans-de-en
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
