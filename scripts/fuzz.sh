#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz/, docs/RELIABILITY.md "Fuzzing"): configures the sanitizer build
# (scripts/configure-sanitized.sh: clang, ASan + UBSan, coverage; shared with
# scripts/test-sanitizers.sh) in BUILD_DIR (default build-sanitize), builds the fuzz targets there,
# replays every checked-in regression input (fuzz/regressions/TARGET/),
# then fuzzes each target for SECONDS from its seeds (fuzz/seeds/TARGET/) and its working corpus
# (BUILD_DIR/fuzz-corpus/TARGET/, kept between runs so that longer runs build on shorter ones).
# Prints a table; exits 1 if any target found a crash, a hang, an error contract broken or a
# check failed (the input is saved as BUILD_DIR/fuzz-findings/TARGET-crash-..., to become a
# regression input once fixed).
#   scripts/fuzz.sh [SECONDS] [TARGET...]    (default 60 s each, every target; JOBS=2 builds)
# CI runs it for 30 s a target after the sanitizer stage.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=${BUILD_DIR:-build-sanitize}
jobs=${JOBS:-2}

# ccache shares the -g build across checkouts (scripts/test-sanitizers.sh says why).
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
bash scripts/configure-sanitized.sh "$build"
targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(sed -n 's/^  \(fuzz_[a-z_]*\))*$/\1/p' fuzz/CMakeLists.txt)
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
findings="$build/fuzz-findings"
mkdir -p "$findings"
# -timeout: an input that takes 10 s is a hang; -malloc_limit_mb: one allocation over 1 GB is an
# unbounded allocation from a size field (no input here needs more than a few MB).
common=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1)

declare -A max_len=([fuzz_safetensors]=65536 [fuzz_score_bleu]=4096 [fuzz_translate]=2048)
status=0
table="| target | regressions | seconds | runs | runs/s | coverage (edges) | corpus | result |"$'\n'"|---|---:|---:|---:|---:|---:|---:|---|"
for target in "${targets[@]}"; do
  binary="$build/fuzz/$target"
  regressions=(fuzz/regressions/"$target"/*)
  replayed=0
  if [[ -e ${regressions[0]} ]]; then
    replayed=${#regressions[@]}
    if ! "$binary" "${common[@]}" "${regressions[@]}" >"$findings/$target.regressions.log" 2>&1; then
      echo "fuzz: $target fails on a checked-in regression input: $findings/$target.regressions.log" >&2
      tail -n 60 "$findings/$target.regressions.log" >&2 || true
      table+=$'\n'"| $target | $replayed | - | - | - | - | - | **a regression input fails** |"
      status=1
      continue
    fi
  fi
  corpus="$build/fuzz-corpus/$target"
  mkdir -p "$corpus"
  log="$findings/$target.log"
  result=ok
  if ! "$binary" "${common[@]}" -max_len="${max_len[$target]:-8192}" -max_total_time="$seconds" \
    -artifact_prefix="$findings/$target-" "$corpus" "fuzz/seeds/$target" >"$log" 2>&1; then
    result="**found something: $log**"
    status=1
    # CI keeps only what is printed: the finding's report (error, stack, input) goes to stderr.
    echo "fuzz: $target found something; the end of $log:" >&2
    grep -v -E '^#[0-9]+' "$log" | tail -n 60 >&2 || true
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  elapsed=$(sed -n 's/.*Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  rate="-"
  if [[ -n $runs && -n $elapsed && $elapsed -gt 0 ]]; then rate=$((runs / elapsed)); fi
  files=$(find "$corpus" -type f | wc -l)
  table+=$'\n'"| $target | $replayed | ${elapsed:-$seconds} | ${runs:--} | $rate | ${cov:--} | $files | $result |"
  echo "fuzz: $target: ${runs:-?} runs, coverage ${cov:-?}, $result" >&2
done
echo
echo "$table"
exit "$status"
