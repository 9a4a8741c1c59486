#!/usr/bin/env bash
# The paper's WMT14 pipeline (docs/WMT14.md): prepare the data, train (the vocabulary is built by
# train), average the last checkpoints, translate newstest2014, score it with score-bleu.
#   scripts/wmt14.sh en-de|en-fr [base|big] [RUN_DIR]
# Environment:
#   DATA_DIR   where the prepared text goes / already is (default data/wmt14-PAIR). If it already holds
#              train.SRC, train.TGT, newstest2013.* and newstest2014.* (plain text, one sentence a line),
#              nothing is downloaded: give your own files this way.
#   DRAGOMAN   the binary (default build/src/dragoman)
#   TRAIN_ARGS extra arguments for `dragoman train` (e.g. "--set training.update_freq=16", "--devices all")
#   TRANSLATE_ARGS extra arguments for `dragoman translate` (e.g. "--device cuda:0 --precision bf16")
#   MODEL      the model that translates the test set: averaged (default: the last 5 or 20
#              checkpoints averaged, as the paper did) or ema (the moving average of the weights,
#              training.ema_decay EMA_DECAY, default 0.9999, set for the training run)
# Prints sacreBLEU's BLEU and chrF, then the paper's tokenized BLEU (score-bleu --paper TGT: Moses
# tokenizer, compound splitting, multi-bleu.perl): the number to hold against the paper's table.
set -euo pipefail
cd "$(dirname "$0")/.."
pair=${1:?usage: scripts/wmt14.sh en-de|en-fr [base|big] [RUN_DIR]}
size=${2:-base}
src=en
case $pair in
  en-de) tgt=de; config=configs/wmt14-en-de.yaml; average=$([[ $size == big ]] && echo 20 || echo 5) ;;
  en-fr) tgt=fr; config=configs/wmt14-en-fr.yaml; average=$([[ $size == big ]] && echo 20 || echo 5) ;;
  *) echo "wmt14: unknown pair $pair (en-de or en-fr)" >&2; exit 2 ;;
esac
[[ $size == base || $size == big ]] || { echo "wmt14: model size must be base or big" >&2; exit 2; }
model=${MODEL:-averaged}
[[ $model == averaged || $model == ema ]] || { echo "wmt14: MODEL must be averaged or ema, not '$model'" >&2; exit 2; }
run=${3:-runs/wmt14-$pair-$size}
data=${DATA_DIR:-data/wmt14-$pair}
dragoman=${DRAGOMAN:-build/src/dragoman}
[[ -x $dragoman ]] || { echo "wmt14: $dragoman not found: build first (scripts/test.sh)" >&2; exit 1; }

# --- 1. data -------------------------------------------------------------------------------------
have_data() {
  for f in train.$src train.$tgt newstest2013.$src newstest2013.$tgt newstest2014.$src newstest2014.$tgt; do
    [[ -s $data/$f ]] || return 1
  done
}
# Plain text of an SGML test set: the <seg> contents, entities decoded.
sgm_to_text() {
  sed -n 's/^.*<seg[^>]*>\(.*\)<\/seg>.*$/\1/p' "$1" |
    sed -e 's/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&apos;/'"'"'/g; s/&amp;/\&/g'
}
if ! have_data; then
  echo "wmt14: preparing $data from statmt.org (the WMT14 training data as the paper used it)"
  command -v wget >/dev/null || { echo "wmt14: needs wget (or put the files in $data, see docs/WMT14.md)" >&2; exit 1; }
  mkdir -p "$data/raw"
  urls=(http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz
        http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz
        http://www.statmt.org/wmt14/training-parallel-nc-v9.tgz
        http://www.statmt.org/wmt14/dev.tgz
        http://www.statmt.org/wmt14/test-full.tgz)
  [[ $pair == en-fr ]] && urls+=(http://www.statmt.org/wmt13/training-parallel-un.tgz
                                 http://www.statmt.org/wmt10/training-giga-fren.tar)
  for url in "${urls[@]}"; do
    file=$data/raw/$(basename "$url")
    if [[ ! -s $file ]]; then
      if ! wget -q --show-progress -O "$file.part" "$url"; then
        echo "wmt14: could not download $url (offline? put the files in $data, see docs/WMT14.md)" >&2
        exit 1
      fi
      mv "$file.part" "$file"
    fi
    tar -xf "$file" -C "$data/raw"
  done
  [[ $pair == en-fr ]] && for f in "$data"/raw/giga-fren.release2.fixed.*.gz; do gunzip -kf "$f"; done
  corpora=("$data/raw/training/europarl-v7.$tgt-en" "$data/raw/commoncrawl.$tgt-en"
           "$data/raw/training/news-commentary-v9.$tgt-en")
  [[ $pair == en-fr ]] && corpora+=("$data"/raw/un/undoc.2000.fr-en "$data"/raw/giga-fren.release2.fixed)
  : >"$data/train.$src.part"
  : >"$data/train.$tgt.part"
  for c in "${corpora[@]}"; do
    cat "$c.$src" >>"$data/train.$src.part"
    cat "$c.$tgt" >>"$data/train.$tgt.part"
  done
  mv "$data/train.$src.part" "$data/train.$src"
  mv "$data/train.$tgt.part" "$data/train.$tgt"
  cp "$data/raw/dev/newstest2013.$src" "$data/newstest2013.$src"
  cp "$data/raw/dev/newstest2013.$tgt" "$data/newstest2013.$tgt"
  lp=${tgt}en
  sgm_to_text "$data/raw/test-full/newstest2014-$lp-src.$src.sgm" >"$data/newstest2014.$src"
  sgm_to_text "$data/raw/test-full/newstest2014-$lp-ref.$tgt.sgm" >"$data/newstest2014.$tgt"
fi
have_data || { echo "wmt14: $data is missing some of the files (see docs/WMT14.md)" >&2; exit 1; }
echo "wmt14: $(wc -l <"$data/train.$src") training pairs in $data"

# --- 2. train (builds the shared vocabulary into the run directory) ------------------------------
model_args=()
[[ $model == ema ]] && model_args=(--set "training.ema_decay=${EMA_DECAY:-0.9999}")
[[ $size == big ]] && model_args+=(--set model.d_model=1024 --set model.d_ff=4096 --set model.heads=16
                                  --set "model.dropout=$([[ $pair == en-fr ]] && echo 0.1 || echo 0.3)"
                                  --set training.max_steps=300000 --set checkpoint.keep_last=20)
# shellcheck disable=SC2086  # TRAIN_ARGS is a list of arguments
"$dragoman" train --config "$config" --run "$run" "${model_args[@]}" \
  --set "data.train_source=$data/train.$src" --set "data.train_target=$data/train.$tgt" \
  --set "data.valid_source=$data/newstest2013.$src" --set "data.valid_target=$data/newstest2013.$tgt" \
  ${TRAIN_ARGS:-}

# --- 3-5. average (or the moving average), translate, score -------------------------------------
if [[ $model == averaged ]]; then
  "$dragoman" average-checkpoints --run "$run" --last "$average" --output "$run/averaged.safetensors"
  weights=$run/averaged.safetensors
else
  weights=$run/checkpoints/checkpoint-last.ema.safetensors
fi
# shellcheck disable=SC2086  # TRANSLATE_ARGS is a list of arguments
"$dragoman" translate --model "$weights" --input "$data/newstest2014.$src" \
  --output "$run/newstest2014.$tgt" --beam 4 --length-penalty 0.6 --max-length-a 1 --max-length-b 50 \
  ${TRANSLATE_ARGS:-}
echo "wmt14: newstest2014 translated with $weights; sacreBLEU's BLEU and chrF, then the paper's tokenized BLEU:"
"$dragoman" score-bleu --ref "$data/newstest2014.$tgt" --input "$run/newstest2014.$tgt" -m bleu,chrf \
  --paper "$tgt" | tee "$run/newstest2014.bleu"
