#!/usr/bin/env bash
# Mixed precision against fp32 on the demo corpus: trains configs/tiny.yaml for
# PRECISION_STEPS updates (default 600) in fp32, bf16 and fp16 from the same seed, prints the dev
# loss of each at every validation and the relative difference at the last one (the criterion: within
# 2 %), then translates the test set with the fp32 model in each --precision and prints BLEU and time.
# On the CPU 16-bit runs are slower than fp32: they are the GPU kernels' spec, not a speed-up.
#   BUILD_DIR=build  PRECISION_STEPS=600  PRECISION_RUNS=runs/precision  PRECISIONS="fp32 bf16 fp16"
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build}
dragoman=$build_dir/src/dragoman
[[ -x $dragoman ]] || { echo "precision-check: build first (scripts/test.sh or cmake --build $build_dir)" >&2; exit 1; }
bash scripts/prepare-demo-data.sh data/demo >/dev/null
steps=${PRECISION_STEPS:-600}
runs=${PRECISION_RUNS:-runs/precision}
read -r -a precisions <<<"${PRECISIONS:-fp32 bf16 fp16}"

for p in "${precisions[@]}"; do
  start=$(date +%s)
  "$dragoman" --quiet train --config configs/tiny.yaml --run "$runs/$p" --set "training.max_steps=$steps" \
    --set "training.valid_every=$((steps / 3))" --set training.valid_bleu=false --set "training.precision=$p"
  echo "$p: $steps updates in $(($(date +%s) - start)) s (resumed runs count only the rest)"
done

echo
echo "dev loss (label-smoothed) per validation"
printf '%8s' step
for p in "${precisions[@]}"; do printf '%12s' "$p"; done
echo
valid_losses() { grep valid_loss "$1/metrics.jsonl" | sed 's/.*"step":\([0-9]*\).*"valid_loss":\([0-9.e+-]*\).*/\1 \2/'; }
paste -d' ' $(for p in "${precisions[@]}"; do
  valid_losses "$runs/$p" >"$runs/$p.valid"
  echo "$runs/$p.valid"
done) | awk '{ printf "%8d", $1; for (i = 2; i <= NF; i += 2) printf "%12.4f", $i; printf "\n" }'
last_fp32=$(tail -n 1 "$runs/fp32.valid" | cut -d' ' -f2)
for p in "${precisions[@]}"; do
  [[ $p == fp32 ]] && continue
  last=$(tail -n 1 "$runs/$p.valid" | cut -d' ' -f2)
  awk -v a="$last" -v b="$last_fp32" -v p="$p" \
    'BEGIN { d = (a - b) / b * 100; printf "%s vs fp32 at the last validation: %+.2f %% (%s)\n", p, d, (d < 2 && d > -2) ? "within 2 %" : "NOT within 2 %" }'
done

echo
echo "translate data/demo/test.en with the fp32 run's model, beam 4"
printf '%10s %8s %10s\n' precision BLEU seconds
for p in fp32 bf16 fp16; do
  start=$(date +%s.%N)
  "$dragoman" --quiet translate -m "$runs/fp32/checkpoints/checkpoint-last.safetensors" -i data/demo/test.en \
    -o "$runs/test.$p.de" --precision "$p"
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  bleu=$("$dragoman" score-bleu --score-only --input "$runs/test.$p.de" --ref data/demo/test.de)
  printf '%10s %8s %10.1f\n' "$p" "$bleu" "$seconds"
done
