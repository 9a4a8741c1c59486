#!/usr/bin/env bash
# The dry run of scripts/gpu-first-run.sh on a machine without a GPU: every step fails
# fast, but the step order, the log names, the file count (at most 8 flat files come back from a
# GPU machine), the summary and the deadline logic are exercised. Skipped (77) where a GPU is
# present: there the script would really run for minutes.
#   Usage: gpu_first_run_dry.sh REPO DRAGOMAN DRAGOMAN_CUDA_TESTS [MODEL_BENCH]
set -uo pipefail
repo=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$3" "[no test has this tag]" >/dev/null 2>&1
[[ $? == 77 ]] || { echo "a CUDA device is present: not a dry run"; exit 77; }
mkdir -p "$work/bundle"
ln -s "$(realpath "$2")" "$work/bundle/dragoman"
ln -s "$(realpath "$3")" "$work/bundle/dragoman_cuda_tests"
[[ -n ${4:-} ]] && ln -s "$(realpath "$4")" "$work/bundle/model_bench"
fail() { echo "FAILED: $*"; exit 1; }
run() {  # run REPORT_DIR DEADLINE [VAR=VALUE...]: the script's exit status
  local report=$1 deadline=$2
  shift 2
  env GPU_BUNDLE="$work/bundle" GPU_WORK="$work/tmp" REPORT_DIR="$report" GPU_DEADLINE="$deadline" "$@" \
    bash "$repo/scripts/gpu-first-run.sh" >"$report.out" 2>&1
}

# The whole first run: seven logs and the summary, flat, each step failing (no GPU).
run "$work/first" 540
[[ $? == 1 ]] || fail "the dry run should exit 1 (every GPU step fails)"
expected="0-env.log 1-ops-tests.log 2-train-cli.log 3-model-bench.log 4-torch-ref.log 5-train-tests.log 6-translate.log summary.md"
got=$(cd "$work/first" && find . -mindepth 1 | sed 's|^\./||' | sort | paste -sd' ')
[[ $got == "$expected" ]] || fail "files: '$got', expected '$expected'"
grep -q '| 0-env | passed |' "$work/first/summary.md" || fail "0-env did not pass: $(cat "$work/first/0-env.log")"
for s in 1-ops-tests 2-train-cli 3-model-bench 4-torch-ref 5-train-tests 6-translate; do
  grep -q "| $s | FAILED" "$work/first/summary.md" || fail "$s should fail without a GPU: $(cat "$work/first/summary.md")"
done
grep -q 'no CUDA device (' "$work/first/1-ops-tests.log" || fail "the cuda tests' skip message names no reason"
grep -q 'no such CUDA device (0 visible: ' "$work/first/2-train-cli.log" || fail "train --devices cuda:0 names no reason"
grep -q '^total [0-9]* s of the 540-s deadline' "$work/first/summary.md" || fail "no total line"
grep -q "^checkout .*, bundle dragoman [0-9.]* (git " "$work/first/summary.md" || fail "the summary does not name the bundle's build: $(head -n 3 "$work/first/summary.md")"

# A deadline already spent: nothing but the summary, every step "not run: deadline".
run "$work/late" 15
[[ $? == 1 ]] || fail "a run that ran nothing should exit 1"
got=$(cd "$work/late" && find . -mindepth 1 | sed 's|^\./||' | paste -sd' ')
[[ $got == summary.md ]] || fail "a spent deadline left '$got'"
[[ $(grep -c 'not run: deadline' "$work/late/summary.md") == 7 ]] || fail "$(cat "$work/late/summary.md")"

# A near deadline caps each step: no cap above the time left (40 s).
run "$work/near" 40
awk -F'|' '/^\| [0-9]-/ { if ($5 + 0 > 40) exit 1 }' "$work/near/summary.md" || fail "a cap beyond the deadline"

# GPU_STEPS picks steps; MODE=sanitize and MODE=profile have their own; an unknown MODE is refused.
run "$work/some" 540 GPU_STEPS="2-train-cli"
[[ $(grep -c 'not run: GPU_STEPS' "$work/some/summary.md") == 5 ]] || fail "GPU_STEPS: $(cat "$work/some/summary.md")"
[[ -f $work/some/2-train-cli.log && ! -f $work/some/1-ops-tests.log ]] || fail "GPU_STEPS ran the wrong steps"
run "$work/sanitize" 540 MODE=sanitize
got=$(cd "$work/sanitize" && find . -mindepth 1 | sed 's|^\./||' | sort | paste -sd' ')
[[ $got == "0-env.log 1-memcheck.log 2-racecheck.log 3-synccheck.log summary.md" ]] || fail "sanitize mode: '$got'"
run "$work/profile" 540 MODE=profile
got=$(cd "$work/profile" && find . -mindepth 1 | sed 's|^\./||' | sort | paste -sd' ')
expected="0-env.log 1-kernels-base.log 2-kernels-big.log 3-kernels-translate.log summary.md"
[[ $got == "$expected" ]] || fail "profile mode: '$got'"
run "$work/bad" 540 MODE=everything
[[ $? == 2 ]] || fail "an unknown MODE should exit 2"
echo "gpu-first-run dry run: all checks passed"
