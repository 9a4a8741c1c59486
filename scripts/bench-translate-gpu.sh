#!/usr/bin/env bash
# Benchmark: `dragoman translate --device cuda:0` beside Hugging Face transformers' MarianMT
# generate() (bench/translate_hf.py) on the same weights, the same GPU, in the same command.
# Prints a Markdown table (docs/PERFORMANCE.md and docs/GPU.md record it). Run on the GPU machine
# with the bundle of scripts/gpu-bundle.sh (.gpu/, with .gpu/bench/ made from
# ../shared/data/bench-en-de: the first dev lines, 2,000 training pairs and a 37,000-piece BPE
# vocabulary built on the corpus), or anywhere with DRAGOMAN=path and BENCH_DATA=dir.
#
# The models are the paper's base and big (configs/transformer-{base,big}.yaml) after one update
# on the GPU: their weights are as good as random, hypotheses run to the length cap, so the cap is
# the source length (--max-length-a 1 --max-length-b 0) for every system, about the length of a
# German translation of English; the table counts the tokens produced, so the work done is known.
# Both systems batch alike (Dragoman's policy: sorted by length, at most 16,384 source tokens and
# 1,024 sentences a batch) and normalise length alike (power, alpha 0.6); "1 sentence" rows
# translate one sentence at a time (a service's latency), on the first SINGLE_LINES lines.
# The last column compares each output with Dragoman's fp32 output at the same beam. The model
# TFLOP/s and MFU columns count the search's matrix products (bench/translate_flops.py, as
# bench/model_flops.h counts a training step) against the GPU's dense peak in that precision.
#   LINES=1000  SINGLE_LINES=20  MODELS="base big"  PRECISIONS="fp32 bf16 fp16"  BEAMS="4 1"
#   REFERENCE=1 (0: Dragoman alone)  DEVICE=cuda:0  KEEP=dir (work files)
set -euo pipefail
cd "$(dirname "$0")/.."
dragoman=${DRAGOMAN:-.gpu/dragoman}
data=${BENCH_DATA:-.gpu/bench}
device=${DEVICE:-cuda:0}
lines=${LINES:-1000}
single_lines=${SINGLE_LINES:-20}
[[ -x $dragoman ]] || { echo "bench-translate-gpu: $dragoman not found (scripts/gpu-bundle.sh)" >&2; exit 2; }
[[ -f $data/vocab.model && -f $data/dev.en && -f $data/small.en ]] ||
  { echo "bench-translate-gpu: $data lacks vocab.model, dev.en or small.en (scripts/gpu-bundle.sh)" >&2; exit 2; }
reference=${REFERENCE:-1}
if [[ $reference == 1 ]] && ! python3 -c 'import torch, transformers, sentencepiece, safetensors' 2>/dev/null; then
  echo "bench-translate-gpu: no reference (python3 lacks torch, transformers, sentencepiece or safetensors)"
  reference=0
fi

work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
head -n "$lines" "$data/dev.en" >"$work/input.en"
head -n "$single_lines" "$data/dev.en" >"$work/single.en"

gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i "${device#cuda:}" 2>/dev/null || echo unknown)
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo unknown)"
echo "revision: $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $("$dragoman" --version | sed -n 1p)"
echo "input: $(wc -l <"$work/input.en") lines of the bench corpus's dev set (1 sentence: the first $single_lines)"

for model in ${MODELS:-base big}; do
  [[ -s $work/$model.safetensors ]] && continue
  "$dragoman" train --config "configs/transformer-$model.yaml" --run "$work/$model-run" --devices "$device" \
    --set "data.train_source=$data/small.en" --set "data.train_target=$data/small.de" \
    --set "data.vocabulary=$data/vocab.model" --set training.max_steps=1 --set training.tokens_per_update=3125 \
    --set checkpoint.every_minutes=0 2>"$work/train.log" || { tail -n 20 "$work/train.log" >&2; exit 1; }
  cp "$work/$model-run/checkpoints/checkpoint-last.safetensors" "$work/$model.safetensors"
done

# measure NAME INPUT OUTPUT LOG COMMAND...: runs it, returns "lines src tgt seconds" from its summary
# line ("translate: N lines, ..." or "hf: N lines, ...").
measure() {
  local log=$1
  shift
  "$@" 2>"$log" || { tail -n 20 "$log" >&2; exit 1; }
  sed -n 's/.*\(translate\|hf\): \([0-9]*\) lines, \([0-9]*\) source tokens, \([0-9]*\) target tokens (1-best) in \([0-9.]*\) s.*/\2 \3 \4 \5/p' "$log"
}
# row SYSTEM MODEL PRECISION BEAM BATCHING NUMBERS OUTPUT BASELINE
row() {
  local same="-"
  [[ -f $8 ]] && same="$(paste -d '\t' "$7" "$8" | awk -F'\t' '$1 == $2 { n++ } END { printf "%d/%d", n, NR }')"
  read -r n src tgt seconds <<<"$6"
  local flops
  flops=$(python3 bench/translate_flops.py "$work/$2.safetensors" "$n" "$src" "$tgt" "$4" "$seconds" "$3" "$gpu_name")
  awk -v sys="$1" -v model="$2" -v p="$3" -v beam="$4" -v batching="$5" -v n="$n" -v src="$src" -v tgt="$tgt" \
    -v s="$seconds" -v same="$same" -v flops="$flops" \
    'BEGIN { split(flops, f, " ")
             printf "| %s | %s | %s | %d | %s | %d | %d | %.2f | %.0f | %.0f | %s | %s | %s |\n",
             model, sys, p, beam, batching, n, tgt, s, src / s, tgt / s, f[1], f[2], same }'
}

echo
echo "| model | system | precision | beam | batches | lines | target tokens | seconds | source tok/s | target tok/s | model TFLOP/s | MFU | same as dragoman fp32 |"
echo "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"
caps=(--max-length-a 1 --max-length-b 0)
for model in ${MODELS:-base big}; do
  for beam in ${BEAMS:-4 1}; do
    for batching in large single; do
      input=$work/input.en
      batch=(--batch-tokens 16384 --batch-sentences 1024)
      [[ $batching == single ]] && input=$work/single.en batch=(--batch-tokens 16384 --batch-sentences 1)
      baseline=$work/$model-$beam-$batching-dragoman-fp32.txt
      for precision in ${PRECISIONS:-fp32 bf16 fp16}; do
        out=$work/$model-$beam-$batching-dragoman-$precision.txt
        numbers=$(measure "$work/translate.log" "$dragoman" translate --model "$work/$model.safetensors" \
          --input "$input" --output "$out" --device "$device" --precision "$precision" --beam "$beam" \
          --length-normalization power --length-penalty 0.6 "${caps[@]}" "${batch[@]}")
        row dragoman "$model" "$precision" "$beam" "$batching" "$numbers" "$out" "$baseline"
        [[ $reference == 1 ]] || continue
        out=$work/$model-$beam-$batching-hf-$precision.txt
        numbers=$(measure "$work/hf.log" python3 bench/translate_hf.py --model "$work/$model.safetensors" \
          --input "$input" --output "$out" --device "$device" --dtype "$precision" --beam "$beam" --alpha 0.6 \
          "${caps[@]}" "${batch[@]}")
        row "transformers MarianMT" "$model" "$precision" "$beam" "$batching" "$numbers" "$out" "$baseline"
      done
    done
  done
done
if [[ $reference == 1 ]]; then
  sed -n 's/^hf: model loaded.*; \(transformers .*\), cuda.*/reference: \1/p' "$work/hf.log"
fi
exit 0
