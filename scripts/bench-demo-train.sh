#!/usr/bin/env bash
# Benchmark: the training speed of configs/demo.yaml (the demo's model, data/demo from
# scripts/prepare-demo-data.sh) for STEPS updates, for each dragoman binary given, at each thread
# count and CPU level. Prints a Markdown table of target tokens/s (the median of the log lines after
# the first 100 updates) and seconds an update; docs/PERFORMANCE.md records it. Runs one at a time.
#   scripts/bench-demo-train.sh [STEPS=400] [THREADS="1 2"] [ISAS="native avx2"] [BINARIES="build/src/dragoman"] [SETTINGS=""]
# ISAS: native (what the CPU has), avx2 or baseline (DRAGOMAN_CPU_ISA and ONEDNN_MAX_CPU_ISA forced
# down: an AVX2 machine's code paths on this one). BINARIES: compare builds of two revisions.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-400}
threads_list=${2:-1 2}
isas=${3:-native avx2}
binaries=${4:-build/src/dragoman}
# SETTINGS: config keys applied to every run, "section.key=value ..." (each one --set), e.g.
# "training.optimizer=adam" to time Adam on the demo config, which uses Muon.
settings=()
for s in ${5:-}; do settings+=(--set "$s"); done
((steps > 200)) || { echo "bench-demo-train: STEPS must be above 200 (100 of warm-up, then the measurement)" >&2; exit 1; }
[[ -f data/demo/train.en ]] || { echo "bench-demo-train: data/demo/train.en not found: run scripts/prepare-demo-data.sh" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
first=${binaries%% *}
[[ -x $first ]] || { echo "bench-demo-train: $first not found: build first (scripts/test.sh)" >&2; exit 1; }
# One vocabulary for every run (building it is not training).
"$first" build-vocab --input data/demo/train.en data/demo/train.de --model-type bpe --vocab-size 8000 \
  --input-sentence-size 2000000 --output "$work/vocab" >/dev/null 2>&1 ||
  { echo "bench-demo-train: build-vocab failed" >&2; exit 1; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; revision $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "configs/demo.yaml${5:+ with $5}, $steps updates (warm-up 100, no validation or checkpoints), tokens/s: the median after update 100"
echo
echo "| binary | CPU level | threads | target tokens/s | s an update |"
echo "|---|---|---:|---:|---:|"
for binary in $binaries; do
  [[ -x $binary ]] || { echo "bench-demo-train: $binary not found" >&2; exit 1; }
  for isa in $isas; do
    env_args=()
    case $isa in
      native) ;;
      avx2) env_args=(DRAGOMAN_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2) ;;
      baseline) env_args=(DRAGOMAN_CPU_ISA=baseline ONEDNN_MAX_CPU_ISA=SSE41) ;;
      *) echo "bench-demo-train: unknown CPU level $isa (native, avx2, baseline)" >&2; exit 1 ;;
    esac
    for threads in $threads_list; do
      log=$work/train.log
      env "${env_args[@]}" "$binary" train -c configs/demo.yaml --run "$work/run" --overwrite \
        --set training.threads="$threads" --set training.max_minutes=0 --set training.max_steps="$steps" \
        --set training.warmup_steps=100 --set training.log_every=50 --set training.valid_every=0 \
        --set checkpoint.every_steps=0 --set data.vocabulary="$work/vocab.model" "${settings[@]}" >"$log" 2>&1 ||
        { echo "bench-demo-train: $binary failed (log: $log)" >&2; tail -5 "$log" >&2; exit 1; }
      # Each log line: "step N | ... | R tgt tok/s | elapsed H:MM:SS | ...": the median rate and the
      # seconds an update from update 100 to the last.
      awk -v binary="$binary" -v isa="$isa" -v threads="$threads" '
        function seconds(t,   p) { split(t, p, ":"); return p[1] * 3600 + p[2] * 60 + p[3] }
        match($0, / step [0-9]+ \|/) {
          step = substr($0, RSTART + 6, RLENGTH - 8) + 0
          if (!match($0, /[0-9]+ tgt tok\/s/)) next
          r = substr($0, RSTART, RLENGTH) + 0
          match($0, /elapsed [0-9:]+/); t = seconds(substr($0, RSTART + 8, RLENGTH - 8))
          if (step == 100) { t0 = t; s0 = step }
          if (step > 100) { rate[++n] = r; t1 = t; s1 = step }
        }
        END {
          if (n == 0 || s0 == 0) { print "bench-demo-train: no speed in the log" > "/dev/stderr"; exit 1 }
          for (i = 2; i <= n; ++i) {  # insertion sort (mawk has no asort)
            v = rate[i]; for (j = i - 1; j >= 1 && rate[j] > v; --j) rate[j + 1] = rate[j]; rate[j + 1] = v
          }
          median = n % 2 ? rate[(n + 1) / 2] : (rate[n / 2] + rate[n / 2 + 1]) / 2
          printf "| %s | %s | %d | %.0f | %.3f |\n", binary, isa, threads, median, (t1 - t0) / (s1 - s0)
        }' "$log"
    done
  done
done
