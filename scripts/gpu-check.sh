#!/usr/bin/env bash
# (A first session on a GPU machine, or any session of about 15 minutes, runs
# scripts/gpu-first-run.sh instead: the same facts in order of importance under a 9-minute deadline.
# This script is for longer sessions: every step at its full size.)
# Every GPU check in one command, for a machine with an NVIDIA GPU and driver but none of our Debian
# libraries: build the bundle here first (scripts/gpu-bundle.sh -> .gpu/), carry the repository
# with .gpu/ to the GPU machine, and run this there. It prints the GPU and library versions, runs
# the cuda tests (dragoman_cuda_tests: every CUDA kernel against its CPU twin, the whole model GPU
# vs CPU, train() on the GPU), `dragoman train --devices cuda:0` from the shell
# (scripts/gpu-train-check.sh), the same tests under compute-sanitizer (memcheck, racecheck, synccheck) when it is
# installed, Dragoman's training step on the GPU (bench/model_bench), the PyTorch reference's
# training throughput (TORCH_REFERENCE=path/to/torch_reference.py, when PyTorch is there), and
# translation speed beside transformers' MarianMT on the same weights
# (scripts/bench-translate-gpu.sh), and writes one report: REPORT_DIR/gpu-check.md and
# REPORT_DIR/gpu-check.json. GPU_CHECK_STEPS="cuda-tests train-cli ..." runs only the steps named
# (the versions step always), so that a session limited to 10 minutes a command can split the check.
#   REPORT_DIR=${OUT:-gpu-check}  TORCH_REFERENCE=(none)  SANITIZE=0  GPU_CHECK_TIMEOUT=300 (per step)
# (SANITIZE=1: the sanitizers on the op-level tests, after everything else.)
# Exit status: 0 when every step that ran passed; 1 otherwise (the report says which).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

report_dir=${REPORT_DIR:-${OUT:-gpu-check}}
step_timeout=${GPU_CHECK_TIMEOUT:-300}
mkdir -p "$report_dir"
md=$report_dir/gpu-check.md
json=$report_dir/gpu-check.json
[[ -x .gpu/dragoman_cuda_tests ]] || { echo "gpu-check: no .gpu/ bundle: run scripts/gpu-bundle.sh on the build machine" >&2; exit 2; }
# The bundle's libraries (they travel compressed), NCCL and cuBLASLt wherever the machine has them
# (a Python environment's too) on LD_LIBRARY_PATH; gpu_op_tags (scripts/gpu-env.sh).
gpu_bundle=.gpu
# shellcheck source=scripts/gpu-env.sh
source scripts/gpu-env.sh

steps_json=()
failed=0
# step NAME COMMAND...: runs COMMAND (time-limited), keeps its output in REPORT_DIR/NAME.log, and
# records the exit status and seconds.
step() {
  local name=$1 start rc seconds
  shift
  if [[ -n ${GPU_CHECK_STEPS:-} && $name != versions && " $GPU_CHECK_STEPS " != *" ${name%%-base-*} "* &&
    " $GPU_CHECK_STEPS " != *" $name "* ]]; then
    echo "== $name: not run (GPU_CHECK_STEPS=$GPU_CHECK_STEPS)"
    return
  fi
  echo "== $name: $*"
  start=$(date +%s.%N)
  timeout "$step_timeout" "$@" >"$report_dir/$name.log" 2>&1
  rc=$?
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  tail -n 5 "$report_dir/$name.log"
  ((rc != 0)) && failed=1
  steps_json+=("{\"name\": \"$name\", \"exit\": $rc, \"seconds\": $seconds}")
  # shellcheck disable=SC2016  # the backquotes are Markdown's
  printf '| %s | `%s` | %s | %s s | %s.log |\n' "$name" "$*" "$([[ $rc -eq 0 ]] && echo passed || echo "FAILED ($rc)")" \
    "$seconds" "$name" >>"$md.steps"
}

: >"$md.steps"
step versions bash -c 'nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv; .gpu/dragoman --version'
step cuda-tests .gpu/dragoman_cuda_tests --durations yes
# `dragoman train --devices cuda:0` from the command line: vocabulary, bf16 training with validation
# BLEU, a resume on the CPU from the GPU's checkpoint, translate and score-bleu (work files in /tmp:
# only flat files come back from a GPU machine).
step train-cli bash scripts/gpu-train-check.sh .gpu/dragoman /tmp/gpu-check-train-cli
# Dragoman's training step on the GPU (bench/model_bench): base and big, bf16 and fp16, batches of
# about 16,384 tokens a side (torch_reference.py's budget; sentences of 32 tokens, its mean length).
step model-bench .gpu/model_bench --device cuda:0 --models base,big --precision bf16,fp16 --tokens 16384 \
  --length 32 --threads 1 --steps 5
if [[ -n ${TORCH_REFERENCE:-} ]] && python3 -c 'import torch' 2>/dev/null; then
  for dtype in bf16 fp16; do
    step "torch-reference-base-$dtype" python3 "$TORCH_REFERENCE" --model base --dtype "$dtype" --steps 30
  done
else
  echo "== torch reference: not run (set TORCH_REFERENCE=path/to/torch_reference.py on a machine with PyTorch)"
fi
# Translation speed: base and big, fp32/bf16/fp16, beam 4 and greedy, large batches and
# one sentence at a time, beside transformers' MarianMT generate() on the same weights.
if [[ -f .gpu/bench/vocab.model ]]; then
  step_timeout=${BENCH_TIMEOUT:-540} step translate-bench bash scripts/bench-translate-gpu.sh
else
  echo "== translate-bench: not run (no .gpu/bench/: scripts/gpu-bundle.sh found no bench corpus)"
fi

# The sanitizers last, and only on the op-level tests (the training tests under instrumentation
# would take far longer than a session has).
if [[ ${SANITIZE:-0} == 1 ]] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck; do
    step "sanitizer-$tool" compute-sanitizer --tool "$tool" --error-exitcode 1 .gpu/dragoman_cuda_tests "$gpu_op_tags"
  done
else
  echo "== compute-sanitizer: not run (SANITIZE=0, or not installed)"
fi

{
  echo "# GPU check"
  echo
  echo "revision $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo '```'
  cat "$report_dir/versions.log"
  echo '```'
  echo
  echo "| step | command | result | time | log |"
  echo "|---|---|---|---|---|"
  cat "$md.steps"
} >"$md"
rm -f "$md.steps"
{
  printf '{"revision": "%s", "steps": [' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  (IFS=,; printf '%s' "${steps_json[*]}")
  printf ']}\n'
} >"$json"
echo
cat "$md"
exit "$failed"
