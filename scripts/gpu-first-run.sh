#!/usr/bin/env bash
# The first run on a GPU machine, in one command of about 9 minutes: the most important facts
# first, each step time-capped, the whole under a global deadline, and each step's log written
# flat into the results folder the moment the step ends (at most 8 files: seven logs and
# summary.md, one line per step, rewritten after every step). Work files go under /tmp.
#
# Run it on the GPU machine from the repository root, with the bundle of scripts/gpu-bundle.sh in
# .gpu/ (binaries, libraries, the translation benchmark's data and torch_reference.py):
#   scripts/gpu-first-run.sh                     # REPORT_DIR=${OUT:-gpu-first-run}
#   GPU_DEADLINE=540 scripts/gpu-first-run.sh    # seconds for the whole (default 540)
#   MODE=sanitize scripts/gpu-first-run.sh       # compute-sanitizer on op-level test tags only
#   SHARED_MEMORY_TAGS='[attention]'             # racecheck/synccheck on these tags (default: every
#                                                # kernel with shared memory)
#   MODE=profile scripts/gpu-first-run.sh        # the GPU time of every kernel of a training step (ncu)
#   GPU_BUNDLE=dir                               # another bundle folder (the dry run's)
#   GPU_STEPS="1-ops-tests 5-train-tests"        # only these steps (0-env always runs)
#
# Steps (MODE=first, the default), in order:
#   0-env          nvidia-smi, the libraries each binary resolves (ldd: "not found" lines), where
#                  NCCL and cuBLASLt were found, dragoman --version (loads cuBLASLt)
#   1-ops-tests    dragoman_cuda_tests without [train] and [translate]: every kernel and op
#                  against its CPU twin, the allocator, tensors, the whole model GPU vs CPU
#   2-train-cli    scripts/gpu-train-check.sh: `dragoman train --devices cuda:0` learns
#   3-model-bench  model_bench on the GPU: the base and big training step in bf16 on sentences of 32
#                  tokens, with the default kernels, without the backward's cuBLASLt epilogues
#                  (DRAGOMAN_CUDA_GRAD_EPILOGUES=off: the column-sum and ReLU kernels), with the tiled
#                  attention (DRAGOMAN_CUDA_ATTENTION=tiled) and with the flash attention
#                  (DRAGOMAN_CUDA_ATTENTION=flash); then on sentences of 100 tokens, default (the tiled
#                  attention there) and flash
#   4-torch-ref    torch_reference.py (PyTorch) on the same GPU and workload: base and big, bf16
#   5-train-tests  dragoman_cuda_tests [train],[translate], then the bf16 training test again with
#                  the flash attention
#   6-translate    scripts/bench-translate-gpu.sh: base, fp32 and bf16, beam 4 and greedy
#                  (TRANSLATE_BEAMS, default "4 1"), beside MarianMT
# MODE=sanitize: 0-env, then memcheck, racecheck and synccheck over the op-level tags.
# MODE=profile: 0-env, then Nsight Compute's per-kernel summary (GPU time of each launch, kernels
# replayed one by one) of model_bench's base and big bf16 training steps (a warm-up step and one
# measured), then of `dragoman translate` (base after one update, fp32, beam 4, 100 dev lines).
# A step that would start with less than 20 s of the deadline left is not run (the summary says
# so); a running step is stopped at its cap or at the deadline, whichever comes first.
# Exit status: 0 when every step ran and passed, 1 otherwise.
# shellcheck disable=SC2317  # the step functions are called through `step` (bash -c)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

mode=${MODE:-first}
bundle=${GPU_BUNDLE:-.gpu}
report_dir=${REPORT_DIR:-${OUT:-gpu-first-run}}
work=${GPU_WORK:-/tmp/gpu-first-run}
deadline=${GPU_DEADLINE:-540}
started=$(date +%s)
mkdir -p "$report_dir" "$work"
summary=$report_dir/summary.md
case $mode in first | sanitize | profile) ;; *) echo "gpu-first-run: MODE is first, sanitize or profile, not '$mode'" >&2; exit 2 ;; esac
[[ -x $bundle/dragoman && -x $bundle/dragoman_cuda_tests ]] ||
  { echo "gpu-first-run: no bundle in $bundle/: run scripts/gpu-bundle.sh on the build machine" >&2; exit 2; }
# The bundle's libraries, NCCL and cuBLASLt on LD_LIBRARY_PATH; gpu_op_tags (scripts/gpu-env.sh).
gpu_bundle=$bundle
# shellcheck source=scripts/gpu-env.sh
source scripts/gpu-env.sh
# A single GPU needs no NCCL (train/communicator.cpp); for several, sockets stay inside the machine.
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-1} NCCL_DEBUG=${NCCL_DEBUG:-WARN}

failed=0
{
  echo "# GPU first run ($mode)"
  echo
  # (the bundle's own build revision: the checkout's git metadata on a device machine can be older
  # than the working tree that was sent)
  echo "checkout $(git rev-parse --short HEAD 2>/dev/null || echo unknown), bundle $("$bundle"/dragoman --version 2>/dev/null |
    head -n 1), $(date -u +%Y-%m-%dT%H:%MZ), deadline ${deadline} s"
  echo
  echo "| step | result | seconds | cap |"
  echo "|---|---|---|---|"
} >"$summary"

# step NAME CAP COMMAND...: runs COMMAND for at most CAP seconds (less if the deadline is nearer),
# its output in REPORT_DIR/NAME.log, and appends one line to the summary.
step() {
  local name=$1 cap=$2 left rc start seconds result
  shift 2
  if [[ -n ${GPU_STEPS:-} && $name != 0-env && " $GPU_STEPS " != *" $name "* ]]; then
    echo "== $name: not run (GPU_STEPS)"
    echo "| $name | not run: GPU_STEPS | 0 | $cap |" >>"$summary"
    return
  fi
  left=$((deadline - ($(date +%s) - started)))
  if ((left < 20)); then
    echo "== $name: not run (${left} s of the deadline left)"
    echo "| $name | not run: deadline | 0 | $cap |" >>"$summary"
    failed=1
    return
  fi
  ((cap > left)) && cap=$left
  echo "== $name (at most $cap s): $*"
  start=$(date +%s.%N)
  { echo "\$ $*"; echo; } >"$report_dir/$name.log"
  # (through bash -c: the functions below are exported, and timeout runs programs, not functions)
  timeout -k 5 "$cap" bash -c '"$@"' "$name" "$@" >>"$report_dir/$name.log" 2>&1
  rc=$?
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  echo "(exit $rc after $seconds s)" >>"$report_dir/$name.log"
  tail -n 4 "$report_dir/$name.log"
  case $rc in
    0) result=passed ;;
    124 | 137) result="STOPPED at $cap s" ;;
    *) result="FAILED ($rc)" ;;
  esac
  ((rc != 0)) && failed=1
  echo "| $name | $result | $seconds | $cap |" >>"$summary"
}

environment() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm --format=csv || true
  echo
  echo "NCCL found in: ${nccl_dirs:-nowhere}"
  echo "cuBLASLt found in: ${cublas_dirs:-nowhere}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo
  for binary in "$bundle"/dragoman "$bundle"/dragoman_cuda_tests "$bundle"/model_bench; do
    [[ -x $binary ]] || continue
    echo "ldd $binary (CUDA libraries and anything not found):"
    ldd "$binary" | grep -E 'not found|nccl|cudart|cublas' || true
  done
  echo
  command -v compute-sanitizer >/dev/null && compute-sanitizer --version | tail -n 1
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' ||
    true
  python3 -c 'import transformers; print("transformers", transformers.__version__)' || true
  echo
  "$bundle"/dragoman --version
}

torch_reference() {
  local model
  for model in base big; do
    echo "## $model, bf16: 4,000 sentences of 32 tokens (model_bench's workload), 20 steps after 5"
    python3 "$bundle/torch_reference.py" --model "$model" --dtype bf16 --steps 20 --warmup 5 --sentences 4000 \
      --len-min 32 --len-max 32 || return
  done
}

translate_bench() {
  [[ -f $bundle/bench/vocab.model ]] || { echo "no $bundle/bench/ (gpu-bundle.sh found no bench corpus)"; return 2; }
  DRAGOMAN=$bundle/dragoman BENCH_DATA=$bundle/bench MODELS=base PRECISIONS="fp32 bf16" \
    BEAMS="${TRANSLATE_BEAMS:-4 1}" SINGLE_LINES=10 KEEP=$work/translate bash scripts/bench-translate-gpu.sh
}

# The training step with the default kernels (the tensor-core attention for these shapes, the
# backward's cuBLASLt epilogues: the bias gradients in the weight gradients' products, the ReLU's
# gradient in fc2's), then without the epilogues (DRAGOMAN_CUDA_GRAD_EPILOGUES=off: the column-sum
# and ReLU kernels, kernels/gemm.h), then with the tiled and the flash attention kernels
# (DRAGOMAN_CUDA_ATTENTION=tiled or flash, kernels/attention.h), for comparison; then sentences
# of 100 tokens (past the one-block tensor-core kernels' 64), default (tiled attention) and flash.
model_bench_both() {
  local variant length
  for variant in "32 default" "32 DRAGOMAN_CUDA_GRAD_EPILOGUES=off" "32 DRAGOMAN_CUDA_ATTENTION=tiled" \
    "32 DRAGOMAN_CUDA_ATTENTION=flash" "100 default" "100 DRAGOMAN_CUDA_ATTENTION=flash"; do
    length=${variant%% *}
    variant=${variant#* }
    echo "## sentences of $length tokens, kernels: $variant"
    # shellcheck disable=SC2046  # the variant is one VAR=value word, or none
    env $([[ $variant == default ]] || echo "$variant") "$bundle"/model_bench --device cuda:0 --models base,big \
      --precision bf16 --tokens 16384 --length "$length" --threads 1 --steps 5 || return
  done
}

# The training and translation tests, then the bf16 training test again with the flash attention
# (kernels/attention.h: not the automatic choice until it has run on a GPU).
train_tests() {
  "$bundle"/dragoman_cuda_tests '[train],[translate]' --durations yes || return
  echo "## DRAGOMAN_CUDA_ATTENTION=flash"
  DRAGOMAN_CUDA_ATTENTION=flash "$bundle"/dragoman_cuda_tests \
    'bf16 training on the GPU tracks f32, and validation BLEU comes from the GPU decoder' --durations yes
}

export -f environment torch_reference translate_bench model_bench_both train_tests
export bundle work nccl_dirs cublas_dirs
kernel_times() {
  local ncu
  ncu=$(command -v ncu || find /opt/nvidia/nsight-compute -maxdepth 2 -name ncu -type f 2>/dev/null | head -n 1)
  [[ -n $ncu ]] || { echo "no ncu (Nsight Compute) on this machine"; return 2; }
  "$ncu" --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel "$bundle"/model_bench \
    --device cuda:0 --models "$1" --precision bf16 --tokens 16384 --length 32 --threads 1 --steps 1
}
# The same for decoding: `dragoman translate` of 100 dev lines at beam 4 in fp32, with the base
# model after one update that 6-translate made (made here when it is not there).
translate_kernel_times() {
  local ncu model=$work/translate/base.safetensors
  ncu=$(command -v ncu || find /opt/nvidia/nsight-compute -maxdepth 2 -name ncu -type f 2>/dev/null | head -n 1)
  [[ -n $ncu ]] || { echo "no ncu (Nsight Compute) on this machine"; return 2; }
  if [[ ! -s $model ]]; then
    DRAGOMAN=$bundle/dragoman BENCH_DATA=$bundle/bench MODELS=base PRECISIONS=fp32 BEAMS=4 LINES=1 SINGLE_LINES=1 \
      REFERENCE=0 KEEP=$work/translate bash scripts/bench-translate-gpu.sh >/dev/null || return
  fi
  head -n 100 "$bundle/bench/dev.en" >"$work/profile.en"
  "$ncu" --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel "$bundle"/dragoman \
    translate --model "$model" --input "$work/profile.en" --output "$work/profile.de" --device cuda:0 \
    --precision fp32 --beam 4 --length-normalization power --length-penalty 0.6 --max-length-a 1 --max-length-b 0
}
export -f kernel_times translate_kernel_times

step 0-env 60 environment
if [[ $mode == profile ]]; then
  step 1-kernels-base 240 kernel_times base
  step 2-kernels-big 240 kernel_times big
  step 3-kernels-translate 240 translate_kernel_times
elif [[ $mode == first ]]; then
  export PYTHONUNBUFFERED=1
  step 1-ops-tests 150 "$bundle"/dragoman_cuda_tests '~[train]~[translate]' --durations yes
  step 2-train-cli 150 bash scripts/gpu-train-check.sh "$bundle"/dragoman "$work/train-cli"
  step 3-model-bench 150 model_bench_both
  step 4-torch-ref 120 torch_reference
  step 5-train-tests 180 train_tests
  step 6-translate 300 translate_bench
else
  # (SHARED_MEMORY_TAGS='[attention]': racecheck and synccheck on the attention kernels alone)
  shared_memory=${SHARED_MEMORY_TAGS:-'[attention],[cross_entropy],[top_k],[elementwise],[embedding],[layer_norm]'}
  step 1-memcheck 130 compute-sanitizer --tool memcheck --error-exitcode 1 "$bundle"/dragoman_cuda_tests "$gpu_op_tags"
  step 2-racecheck 240 compute-sanitizer --tool racecheck --error-exitcode 1 "$bundle"/dragoman_cuda_tests \
    "$shared_memory"
  step 3-synccheck 50 compute-sanitizer --tool synccheck --error-exitcode 1 "$bundle"/dragoman_cuda_tests \
    "$shared_memory"
fi
echo
echo "total $(($(date +%s) - started)) s of the ${deadline}-s deadline" >>"$summary"
cat "$summary"
exit "$failed"
