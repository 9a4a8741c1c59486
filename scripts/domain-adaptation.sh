#!/usr/bin/env bash
# Domain adaptation on the demo corpus, measured (docs/TRAINING.md, "Fine-tuning a model"): a model
# trained on the Debian package descriptions only (configs/demo.yaml's recipe, BASE_MINUTES), then
# fine-tuned on the gettext catalogs (dragoman train --init, FT_MINUTES); fine-tuned on the catalogs
# mixed with as many description pairs (mixed fine-tuning, Chu et al. 2017: what is kept of the
# first domain); and the same base trained on for the same minutes on its own data, so that the
# table separates what the new domain gives from what more training gives. Prints the BLEU of each model on each part's held-out test
# sentences (data/demo/test.origin), with the paper's beam 4 and alpha 0.6.
#   scripts/domain-adaptation.sh [OUT_DIR]      (default runs/domain-adaptation)
#   BASE_MINUTES=10  FT_MINUTES=3  DRAGOMAN=build/src/dragoman  FT_LR=0.0005
# Needs data/demo (scripts/prepare-demo-data.sh) and a built dragoman.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/domain-adaptation}
dragoman=${DRAGOMAN:-build/src/dragoman}
base_minutes=${BASE_MINUTES:-10}
ft_minutes=${FT_MINUTES:-3}
ft_lr=${FT_LR:-0.0005}
die() { echo "domain-adaptation: $*" >&2; exit 1; }
[[ -x $dragoman ]] || die "$dragoman is not built (scripts/test.sh builds it, or set DRAGOMAN)"
[[ -f data/demo/train.origin ]] || die "data/demo is missing: run scripts/prepare-demo-data.sh first"
mkdir -p "$out/data"
out=$(cd "$out" && pwd)

# The parts: each split's lines by their origin.
for split in train dev test; do
  for origin in descriptions catalogs; do
    for side in en de; do
      paste -d '\t' "data/demo/$split.origin" "data/demo/$split.$side" |
        awk -F'\t' -v o="$origin" '$1 == o { print substr($0, length(o) + 2) }' >"$out/data/$split.$origin.$side"
    done
  done
done
# The mix: every catalog pair and as many description pairs (the first ones).
catalog_pairs=$(wc -l <"$out/data/train.catalogs.en")
for side in en de; do
  cat "$out/data/train.catalogs.$side" <(head -n "$catalog_pairs" "$out/data/train.descriptions.$side") \
    >"$out/data/train.mixed.$side"
  cat "$out/data/dev.catalogs.$side" "$out/data/dev.descriptions.$side" >"$out/data/dev.mixed.$side"
done
echo "descriptions: $(wc -l <"$out/data/train.descriptions.en") training pairs, catalogs: $catalog_pairs"

# 1. The base model: the demo's recipe on the descriptions alone.
echo "== base: configs/demo.yaml on the descriptions, $base_minutes minutes"
"$dragoman" train -c configs/demo.yaml --run "$out/base" --no-progress --max-minutes "$base_minutes" \
  --set "data.train_source=$out/data/train.descriptions.en" --set "data.train_target=$out/data/train.descriptions.de" \
  --set "data.valid_source=$out/data/dev.descriptions.en" --set "data.valid_target=$out/data/dev.descriptions.de" \
  2>&1 | grep -E "train: done|already finished|valid step|error" | tee -a "$out/base.out" || true
base=$out/base/checkpoints/checkpoint-last.safetensors
[[ -f $base ]] || die "the base run wrote no checkpoint ($out/base/train.log)"

# 2. Fine-tuning from it: the catalogs, and (the control) the descriptions again. No model
# section: the architecture and the vocabulary are the base model's. Adam at a constant rate after
# a short warmup, then annealed over the budget, the demo's label smoothing.
finetune() {
  local name=$1 part=$2
  cat >"$out/$name.yaml" <<YAML
model:
  dropout: 0.0
  label_smoothing: 0.1
data:
  train_source: data/train.$part.en
  train_target: data/train.$part.de
  valid_source: data/dev.$part.en
  valid_target: data/dev.$part.de
  max_length: 100
training:
  max_tokens: 1024
  max_steps: 0
  lr: $ft_lr
  warmup_steps: 100
  lr_decay: linear
  lr_hold: 0.6
  log_every: 100
  valid_every: 500
  threads: 2
checkpoint:
  every_steps: 100
  every_minutes: 0
YAML
  echo "== $name: train --init the base model on the $part, $ft_minutes minutes"
  "$dragoman" train -c "$out/$name.yaml" --init "$base" --run "$out/$name" --no-progress --max-minutes "$ft_minutes" \
    2>&1 | grep -E "train: done|already finished|valid step|error" | tee -a "$out/$name.out" || true
  [[ -f $out/$name/checkpoints/checkpoint-last.safetensors ]] || die "the $name run wrote no checkpoint"
}
finetune adapted catalogs
finetune mixed mixed
finetune control descriptions

# 3. Each model on each part's test sentences.
bleu() { "$dragoman" score-bleu --ref "$1" --input "$2" --score-only --width 2; }
declare -A scores
for name in base adapted mixed control; do
  model=$base
  [[ $name != base ]] && model=$out/$name/checkpoints/checkpoint-last.safetensors
  for part in descriptions catalogs; do
    "$dragoman" translate -m "$model" -i "$out/data/test.$part.en" -o "$out/$name.test.$part.de" --quiet \
      --beam 4 --length-penalty 0.6
    scores[$name.$part]=$(bleu "$out/data/test.$part.de" "$out/$name.test.$part.de")
  done
done
steps() { sed -n 's/.*\(done\|finished\) at step \([0-9]*\).*/\2/p' "$1.out" | tail -n 1; }
echo
echo "BLEU on the held-out test sentences of each part ($(wc -l <"$out/data/test.descriptions.en") descriptions, $(wc -l <"$out/data/test.catalogs.en") catalog lines; beam 4, alpha 0.6):"
printf '  %-58s %12s %9s\n' model descriptions catalogs
printf '  %-58s %12s %9s\n' "base: descriptions, $base_minutes min ($(steps "$out/base") updates)" \
  "${scores[base.descriptions]}" "${scores[base.catalogs]}"
printf '  %-58s %12s %9s\n' "adapted: + catalogs, $ft_minutes min ($(steps "$out/adapted") updates, --init)" \
  "${scores[adapted.descriptions]}" "${scores[adapted.catalogs]}"
printf '  %-58s %12s %9s\n' "mixed: + catalogs and descriptions, $ft_minutes min ($(steps "$out/mixed") updates)" \
  "${scores[mixed.descriptions]}" "${scores[mixed.catalogs]}"
printf '  %-58s %12s %9s\n' "control: + descriptions, $ft_minutes min ($(steps "$out/control") updates)" \
  "${scores[control.descriptions]}" "${scores[control.catalogs]}"
