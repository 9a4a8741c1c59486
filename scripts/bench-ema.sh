#!/usr/bin/env bash
# Benchmark: the last checkpoint, the average of the last checkpoints, and the moving average of
# the weights (training.ema_decay) of one CPU training run on the real English-German corpus of
# ../shared/data/bench-en-de (not part of this repository): configs/tiny.yaml's model, an
# 8,000-piece BPE vocabulary, STEPS updates, a checkpoint every STEPS/20 updates (the average
# takes the last 5: the last quarter of the run). Each model then
# translates the 1,000 dev sentences (beam 4) and scores the dev references (force decoding):
# prints a Markdown table of sacreBLEU's BLEU, the paper's tokenized BLEU and the references'
# log-probability per piece (docs/PERFORMANCE.md records it). Needs a built tree (scripts/test.sh).
#   scripts/bench-ema.sh [STEPS=3000] [EMA_DECAY=0.999] [THREADS=2] [BUILD_DIR=build] [DATA_DIR=../shared/data/bench-en-de]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-3000}
decay=${2:-0.999}
threads=${3:-2}
build_dir=${4:-build}
data=${5:-../shared/data/bench-en-de}
dragoman=$build_dir/src/dragoman
[[ -x $dragoman ]] || { echo "bench-ema: $dragoman not found: build first (scripts/test.sh)" >&2; exit 1; }
[[ -f $data/train.en.xz ]] || { echo "bench-ema: $data/train.en.xz not found" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in train.en train.de dev.en dev.de; do xz -dc "$data/$f.xz" >"$work/$f"; done
every=$((steps / 20))
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; revision $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "training: configs/tiny.yaml, $steps updates, checkpoints every $every, ema_decay $decay, $threads threads"
"$dragoman" train --config configs/tiny.yaml --run "$work/run" \
  --set "data.train_source=$work/train.en" --set "data.train_target=$work/train.de" \
  --set "data.valid_source=$work/dev.en" --set "data.valid_target=$work/dev.de" \
  --set data.vocab_size=8000 --set data.vocab_sample=200000 \
  --set "training.max_steps=$steps" --set "training.threads=$threads" --set "training.ema_decay=$decay" \
  --set training.log_every=50 --set "training.valid_every=$((steps / 4))" --set training.valid_bleu=false \
  --set "checkpoint.every_steps=$every" --set checkpoint.every_minutes=0 2>"$work/train.log" ||
  { tail -n 20 "$work/train.log" >&2; exit 1; }
"$dragoman" average-checkpoints --run "$work/run" --last 5 --output "$work/averaged.safetensors" 2>/dev/null
last=$work/run/checkpoints/checkpoint-last.safetensors
ema=$work/run/checkpoints/checkpoint-last.ema.safetensors
echo
echo "| model | dev BLEU (sacreBLEU) | dev BLEU (tokenized, --paper de) | references' log-probability per piece (mean over sentences) |"
echo "|---|---:|---:|---:|"
for name in last averaged ema; do
  case $name in
    last) model=$last; label="last checkpoint (step $steps)" ;;
    averaged) model=$work/averaged.safetensors; label="average of the last 5 checkpoints" ;;
    ema) model=$ema; label="moving average (ema_decay $decay)" ;;
  esac
  "$dragoman" translate --model "$model" --input "$work/dev.en" --output "$work/$name.de" --beam 4 \
    --threads "$threads" 2>/dev/null
  read -r sacre paper < <("$dragoman" score-bleu -r "$work/dev.de" -i "$work/$name.de" --paper de -b -w 2 | paste -sd ' ')
  "$dragoman" score --model "$model" --source "$work/dev.en" --target "$work/dev.de" --normalize \
    --threads "$threads" --output "$work/$name.scores" 2>/dev/null
  logprob=$(awk '{ s += $1 } END { printf "%.4f", s / NR }' "$work/$name.scores")
  echo "| $label | $sacre | $paper | $logprob |"
done
