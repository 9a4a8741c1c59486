#!/usr/bin/env bash
# Benchmark: one CPU training step (forward + backward + Adam) of the paper's base and big models
# for a batch of about 4,000 source + 4,000 target tokens, at 1 and 2 threads (bench/model_bench.cpp).
# Prints a Markdown table (docs/PERFORMANCE.md records it). Needs a built tree (scripts/test.sh).
#   scripts/bench-model.sh [BUILD_DIR] [extra model_bench options, e.g. --models base --steps 3,
#   --precision fp32,bf16]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true
bench=$build_dir/bench/model_bench
[[ -x $bench ]] || { echo "bench-model: $bench not found: build first (scripts/test.sh)" >&2; exit 1; }
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB"
echo "revision: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo
"$bench" --models base,big --tokens 4000 --length 25 --vocab 37000 --threads 1,2 --steps 2 "$@"
