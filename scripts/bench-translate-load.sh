#!/usr/bin/env bash
# Benchmark: `dragoman translate` alone and beside busy cores. OpenMP threads that
# spin at barriers lose badly to any other process on their cores: a team of N threads on N cores
# with one core taken waits at every barrier for the thread that is not running. This times the
# same translation under the OpenMP wait settings that matter, with 1 and 2 threads, with no other
# load and with BUSY cores taken by a busy loop (`yes > /dev/null`, one per core). Prints a
# Markdown table (docs/PERFORMANCE.md records it); seconds are translate's own (the translation,
# not loading the model), the median of REPEATS runs.
#   scripts/bench-translate-load.sh MODEL INPUT [BUILD_DIR=build] [REPEATS=3] [BUSY=1]
#   environment: DRAGOMAN=a binary to time instead of BUILD_DIR's (e.g. an older build);
#                SETTINGS="default passive ..." to time only some of the settings below;
#                NEIGHBOUR="command" to run BUSY copies of instead of the busy loop (e.g. a
#                `dragoman train` run: another OpenMP program, the issue's case)
# Settings: default (what the binary does with no OpenMP variable set), active
# (OMP_WAIT_POLICY=active: spin without end), spin300k (GOMP_SPINCOUNT=300000, libgomp's default
# spin when OMP_WAIT_POLICY is unset), spin10k and spin1k (GOMP_SPINCOUNT=10000, 1000), passive
# (OMP_WAIT_POLICY=passive: sleep at once). A setting's variable is in the environment of that
# run only. translate sets GOMP_SPINCOUNT=1000 itself when neither variable is set (src/main.cpp,
# from the commit that added this script on), so "default" is spin1k there and spin300k before.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench-translate-load.sh MODEL INPUT [BUILD_DIR] [REPEATS] [BUSY]}
input=${2:?usage: bench-translate-load.sh MODEL INPUT [BUILD_DIR] [REPEATS] [BUSY]}
build_dir=${3:-build}
repeats=${4:-3}
busy=${5:-1}
dragoman=${DRAGOMAN:-$build_dir/src/dragoman}
[[ -x $dragoman ]] || { echo "bench-translate-load: $dragoman not found: build first" >&2; exit 1; }
settings=${SETTINGS:-default active spin300k spin10k passive}

work=$(mktemp -d)
busy_pids=()
stop_busy() {
  # A NEIGHBOUR runs in its own session: its process group goes, children included.
  for pid in "${busy_pids[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
  for pid in "${busy_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  busy_pids=()
}
trap 'stop_busy; rm -rf "$work"' EXIT

# The environment of one setting, as VAR=VALUE words for env(1).
setting_env() {
  case $1 in
    default) ;;
    active) echo "OMP_WAIT_POLICY=active" ;;
    spin300k) echo "GOMP_SPINCOUNT=300000" ;;
    spin10k) echo "GOMP_SPINCOUNT=10000" ;;
    spin1k) echo "GOMP_SPINCOUNT=1000" ;;
    passive) echo "OMP_WAIT_POLICY=passive" ;;
    *) echo "bench-translate-load: unknown setting $1" >&2; exit 1 ;;
  esac
}

# One run: SETTING THREADS -> translate's seconds.
run_once() {
  # shellcheck disable=SC2046
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS $(setting_env "$1") \
    "$dragoman" translate --model "$model" --input "$input" --output "$work/out.txt" --threads "$2" \
    2>"$work/log" || { tail -n 5 "$work/log" >&2; exit 1; }
  sed -n 's/.*translate: [0-9]* lines, .* in \([0-9.]*\) s:.*/\1/p' "$work/log"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $dragoman ($("$dragoman" --version | head -n 1)); revision $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$dragoman" --version | grep -E '^(CPU|int8)' || true  # the instruction set each CPU library runs
echo "input: $(wc -l <"$input") lines of $input; model $model; median of $repeats runs"
echo
echo "neighbour: $busy x ${NEIGHBOUR:-yes >/dev/null}"
echo "| setting | threads | alone s | beside the neighbour s | slowdown |"
echo "|---|---:|---:|---:|---:|"
for setting in $settings; do
  for threads in 1 2; do
    alone=$(for ((r = 0; r < repeats; r++)); do run_once "$setting" "$threads"; done | median)
    for ((b = 0; b < busy; b++)); do
      if [[ -n ${NEIGHBOUR:-} ]]; then
        setsid bash -c "$NEIGHBOUR" >/dev/null 2>&1 &
      else
        yes >/dev/null &
      fi
      busy_pids+=($!)
    done
    sleep 2  # the neighbour at full speed
    loaded=$(for ((r = 0; r < repeats; r++)); do run_once "$setting" "$threads"; done | median)
    stop_busy
    awk -v s="$setting" -v t="$threads" -v a="$alone" -v l="$loaded" \
      'BEGIN { printf "| %s | %d | %.2f | %.2f | %.1fx |\n", s, t, a, l, l / a }'
  done
done
