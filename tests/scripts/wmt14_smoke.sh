#!/usr/bin/env bash
# scripts/wmt14.sh end to end on a few thousand committed lines standing in for WMT14
# (DATA_DIR holds the files, so nothing is downloaded) with a tiny model and 30 updates: both
# models (MODEL=averaged, the paper's; MODEL=ema) translate the "newstest2014" lines, and the
# score file holds sacreBLEU's BLEU and chrF and the paper's tokenized BLEU. The numbers are
# meaningless (a model of 30 updates); the pipeline is what is checked.
# Usage: wmt14_smoke.sh REPO_ROOT DRAGOMAN
set -uo pipefail
root=$1
dragoman=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Committed text (the BLEU fixtures' 3,000-line random corpus and its second reference) stands in
# for the parallel data: the pipeline, not the translations, is under test.
text=$root/tests/fixtures/bleu
mkdir -p "$tmp/data"
cp "$text/random.ref" "$tmp/data/train.en"
cp "$text/random.ref2" "$tmp/data/train.de"
head -n 60 "$text/random.ref" >"$tmp/data/newstest2013.en"
head -n 60 "$text/random.ref2" >"$tmp/data/newstest2013.de"
sed -n '101,180p' "$text/random.ref" >"$tmp/data/newstest2014.en"
sed -n '101,180p' "$text/random.ref2" >"$tmp/data/newstest2014.de"
tiny="--set data.vocab_size=600 --set data.vocab_sample=0 --set model.d_model=32 --set model.d_ff=64"
tiny+=" --set model.heads=2 --set model.encoder_layers=1 --set model.decoder_layers=1"
tiny+=" --set training.max_steps=30 --set training.max_tokens=1000 --set training.tokens_per_update=1000"
tiny+=" --set training.warmup_steps=10 --set training.valid_every=15 --set training.log_every=10"
tiny+=" --set checkpoint.every_steps=5 --set checkpoint.every_minutes=0 --set training.threads=2"
failures=0
for model in averaged ema; do
  run=$tmp/run-$model
  # (80 test lines, not 3,003: the count check lets it go on when told.)
  if ! ALLOW_COUNT_MISMATCH=1 DATA_DIR=$tmp/data DRAGOMAN=$dragoman MODEL=$model EMA_DECAY=0.9 TRAIN_ARGS=$tiny \
    bash "$root/scripts/wmt14.sh" en-de base "$run" >"$tmp/$model.log" 2>&1; then
    echo "FAIL $model: scripts/wmt14.sh failed:"; tail -n 20 "$tmp/$model.log"; failures=$((failures + 1)); continue
  fi
  weights=$run/averaged.safetensors
  [[ $model == ema ]] && weights=$run/checkpoints/checkpoint-last.ema.safetensors
  scores=$run/newstest2014.bleu
  if [[ $(wc -l <"$run/newstest2014.de") -eq 80 ]] && grep -q "translated with $weights" "$tmp/$model.log" &&
    grep -q "^ *BLEU|nrefs:1|.*|tok:13a|" "$scores" && grep -q "^ *chrF2|" "$scores" &&
    grep -q "^BLEU|.*|tok:moses-de+norm+atat|smooth:none|.* (tokenized BLEU as in the paper" "$scores"; then
    echo "ok $model"
  else
    echo "FAIL $model: translations, log or scores not as expected:"; cat "$scores"; failures=$((failures + 1))
  fi
done
[[ -f $tmp/run-averaged/averaged.safetensors ]] || { echo "FAIL no averaged model"; failures=$((failures + 1)); }
[[ $failures -eq 0 ]]
