#!/usr/bin/env bash
# The paper's WMT14 pipeline (docs/WMT14.md): prepare the data, train (the vocabulary is built by
# train), average the last checkpoints, translate newstest2014, score it with score-bleu.
#   scripts/wmt14.sh en-de|en-fr [base|big] [RUN_DIR]
# Environment:
#   DATA_DIR   where the prepared text goes / already is (default data/wmt14-PAIR). If it already holds
#              train.SRC, train.TGT, newstest2013.* and newstest2014.* (plain text, one sentence a line),
#              nothing is downloaded: give your own files this way.
#   DRAGOMAN   the binary (default build/src/dragoman)
#   TRAIN_ARGS extra arguments for `dragoman train` (e.g. "--devices all", "--set training.max_tokens=6250"):
#              the batch stays the paper's 25,000 tokens per update on any number of GPUs
#              (training.tokens_per_update)
#   TRANSLATE_ARGS extra arguments for `dragoman translate` (e.g. "--device cuda:0 --precision bf16")
#   MODEL      the model that translates the test set: averaged (default: the last 5 or 20
#              checkpoints averaged, as the paper did) or ema (the moving average of the weights,
#              training.ema_decay EMA_DECAY, default 0.9999, set for the training run)
#   KEEP_DOWNLOADS=1  keep the archives and what was extracted from them (by default removed once the
#              training text is written: 3 GB for EN-DE, some 25 GB for EN-FR)
#   ALLOW_COUNT_MISMATCH=1  go on when the line counts differ from WMT14's (they are checked and any
#              difference is listed either way)
# Prints sacreBLEU's BLEU and chrF, then the paper's tokenized BLEU (score-bleu --paper TGT:
# tensor2tensor's get_ende_bleu.sh for German): the number to hold against the paper's table.
set -euo pipefail
if ((BASH_VERSINFO[0] < 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 2))); then
  echo "wmt14: needs bash 4.2 or newer, this is bash $BASH_VERSION" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
pair=${1:?usage: scripts/wmt14.sh en-de|en-fr [base|big] [RUN_DIR]}
size=${2:-base}
src=en
case $pair in
  en-de) tgt=de; config=configs/wmt14-en-de.yaml ;;
  en-fr) tgt=fr; config=configs/wmt14-en-fr.yaml ;;
  *) echo "wmt14: unknown pair $pair (en-de or en-fr)" >&2; exit 2 ;;
esac
[[ $size == base || $size == big ]] || { echo "wmt14: model size must be base or big" >&2; exit 2; }
average=$([[ $size == big ]] && echo 20 || echo 5)
model=${MODEL:-averaged}
[[ $model == averaged || $model == ema ]] || { echo "wmt14: MODEL must be averaged or ema, not '$model'" >&2; exit 2; }
run=${3:-runs/wmt14-$pair-$size}
data=${DATA_DIR:-data/wmt14-$pair}
dragoman=${DRAGOMAN:-build/src/dragoman}
[[ -x $dragoman ]] || { echo "wmt14: $dragoman not found: build first (scripts/test.sh)" >&2; exit 1; }
allow_mismatch=${ALLOW_COUNT_MISMATCH:-0}

# thousands N: 4520620 -> 4,520,620
thousands() { printf "%s" "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
lines() { wc -l <"$1" | tr -d ' '; }

# WMT14's line counts (sentence pairs), as statmt.org's archives hold them.
declare -A expected=([newstest2013]=3000 [newstest2014]=3003)
if [[ $pair == en-de ]]; then
  corpora=(training/europarl-v7.de-en commoncrawl.de-en training/news-commentary-v9.de-en)
  expected+=([training/europarl-v7.de-en]=1920209 [commoncrawl.de-en]=2399123
             [training/news-commentary-v9.de-en]=201288 [train]=4520620)
else
  corpora=(training/europarl-v7.fr-en commoncrawl.fr-en un/undoc.2000.fr-en training/news-commentary-v9.fr-en
           giga-fren.release2.fixed)
  expected+=([training/europarl-v7.fr-en]=2007723 [commoncrawl.fr-en]=3244152 [un/undoc.2000.fr-en]=12886831
             [training/news-commentary-v9.fr-en]=183251 [giga-fren.release2.fixed]=22520376 [train]=40842333)
fi
mismatches=()
# count_check KEY FOUND [NAME]: records a difference from WMT14's count for KEY.
count_check() {
  [[ $2 -eq ${expected[$1]} ]] ||
    mismatches+=("${3:-$1}: $(thousands "$2") lines, WMT14 has $(thousands "${expected[$1]}")")
}
# mismatch_verdict WHAT: lists the differences; stops unless ALLOW_COUNT_MISMATCH=1.
mismatch_verdict() {
  ((${#mismatches[@]} == 0)) && return 0
  echo "wmt14: $1 differ from WMT14's:" >&2
  printf '  %s\n' "${mismatches[@]}" >&2
  if [[ $allow_mismatch != 1 ]]; then
    echo "wmt14: stopping (a changed download, or not the paper's data: ALLOW_COUNT_MISMATCH=1 goes on anyway)" >&2
    exit 1
  fi
  echo "wmt14: going on (ALLOW_COUNT_MISMATCH=1): the results are not comparable with the paper's" >&2
  mismatches=()
}

# --- 1. data -------------------------------------------------------------------------------------
have_data() {
  for f in train.$src train.$tgt newstest2013.$src newstest2013.$tgt newstest2014.$src newstest2014.$tgt; do
    [[ -s $data/$f ]] || return 1
  done
}
# Plain text of an SGML test set exactly as sacreBLEU reads it (`sacrebleu -t wmt14/full`): the
# lines that start with "<seg ", the text inside the tag, spaces stripped and collapsed, entities
# left as they are. (perl is part of every Debian system.)
sgm_to_text() {
  perl -CSD -ne 'next unless /^<seg /; s/<seg.*?>(.*)<\/seg>.*?/$1/; s/^\s+|\s+$//g; s/\s+/ /g; print "$_\n"' "$1"
}
# The archives, what each holds for this pair, and where the files come from.
archives=(http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz
          http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz
          http://www.statmt.org/wmt14/training-parallel-nc-v9.tgz
          http://www.statmt.org/wmt14/dev.tgz
          http://www.statmt.org/wmt14/test-full.tgz)
[[ $pair == en-fr ]] && archives+=(http://www.statmt.org/wmt13/training-parallel-un.tgz
                                   http://www.statmt.org/wmt10/training-giga-fren.tar)
lp=${tgt}en
# members ARCHIVE: the paths this pipeline takes from it (the archives hold every WMT pair).
members() {
  case $(basename "$1") in
    training-parallel-europarl-v7.tgz) echo "training/europarl-v7.$tgt-en.$src training/europarl-v7.$tgt-en.$tgt" ;;
    training-parallel-commoncrawl.tgz) echo "commoncrawl.$tgt-en.$src commoncrawl.$tgt-en.$tgt" ;;
    training-parallel-nc-v9.tgz) echo "training/news-commentary-v9.$tgt-en.$src training/news-commentary-v9.$tgt-en.$tgt" ;;
    dev.tgz) echo "dev/newstest2013.$src dev/newstest2013.$tgt" ;;
    test-full.tgz) echo "test-full/newstest2014-$lp-src.$src.sgm test-full/newstest2014-$lp-ref.$tgt.sgm" ;;
    training-parallel-un.tgz) echo "un/undoc.2000.fr-en.en un/undoc.2000.fr-en.fr" ;;
    training-giga-fren.tar) echo "giga-fren.release2.fixed.en.gz giga-fren.release2.fixed.fr.gz" ;;
  esac
}
if ! have_data; then
  echo "wmt14: preparing $data from statmt.org (the WMT14 training data as the paper used it)"
  command -v wget >/dev/null || { echo "wmt14: needs wget (or put the files in $data, see docs/WMT14.md)" >&2; exit 1; }
  raw=$data/raw
  mkdir -p "$raw"
  for url in "${archives[@]}"; do
    file=$raw/$(basename "$url")
    if [[ ! -s $file ]]; then
      if ! wget -q --show-progress -O "$file.part" "$url"; then
        rm -f "$file.part"
        echo "wmt14: could not download $url (offline? put the files in $data, see docs/WMT14.md)" >&2
        exit 1
      fi
      mv "$file.part" "$file"
    fi
    # Only this pair's files (with or without a leading ./ in the archive), in one pass over it.
    patterns=()
    for member in $(members "$url"); do patterns+=("$member" "./$member"); done
    tar -xf "$file" -C "$raw" --wildcards "${patterns[@]}" 2>/dev/null || true
    for member in $(members "$url"); do
      if [[ ! -s $raw/$member ]]; then
        echo "wmt14: $file does not hold $member (a damaged download? delete it and run again)" >&2
        exit 1
      fi
    done
  done
  # The training text: every corpus's pairs counted (both sides alike) and appended; giga-fren is
  # read compressed.
  side_of() { if [[ -s $raw/$1.$2.gz ]]; then gzip -dc "$raw/$1.$2.gz"; else cat "$raw/$1.$2"; fi; }
  : >"$data/train.$src.part"
  : >"$data/train.$tgt.part"
  total=0
  for c in "${corpora[@]}"; do
    n_src=$(side_of "$c" "$src" | tee -a "$data/train.$src.part" | wc -l)
    n_tgt=$(side_of "$c" "$tgt" | tee -a "$data/train.$tgt.part" | wc -l)
    if [[ $n_src -ne $n_tgt ]]; then
      rm -f "$data"/*.part
      echo "wmt14: $c has $(thousands "$n_src") $src lines but $(thousands "$n_tgt") $tgt lines" >&2
      exit 1
    fi
    count_check "$c" "$n_src"
    total=$((total + n_src))
  done
  count_check train "$total" "all training pairs"
  sgm_to_text "$raw/test-full/newstest2014-$lp-src.$src.sgm" >"$data/newstest2014.$src.part"
  sgm_to_text "$raw/test-full/newstest2014-$lp-ref.$tgt.sgm" >"$data/newstest2014.$tgt.part"
  cp "$raw/dev/newstest2013.$src" "$data/newstest2013.$src.part"
  cp "$raw/dev/newstest2013.$tgt" "$data/newstest2013.$tgt.part"
  for set in newstest2013 newstest2014; do
    for side in $src $tgt; do count_check "$set" "$(lines "$data/$set.$side.part")" "$set.$side"; done
  done
  # Nothing half-written stays behind a refusal (the downloads stay for the next try).
  if ((${#mismatches[@]} > 0)) && [[ $allow_mismatch != 1 ]]; then rm -f "$data"/*.part; fi
  mismatch_verdict "the downloaded files' line counts"
  for f in train.$src train.$tgt newstest2013.$src newstest2013.$tgt newstest2014.$src newstest2014.$tgt; do
    mv "$data/$f.part" "$data/$f"
  done
  if [[ ${KEEP_DOWNLOADS:-0} == 1 ]]; then
    echo "wmt14: kept the archives and extracted files in $raw (KEEP_DOWNLOADS=1)"
  else
    echo "wmt14: removing $raw ($(du -sh "$raw" | cut -f1): the archives and what was extracted; KEEP_DOWNLOADS=1 keeps them)"
    rm -rf "$raw"
  fi
fi
have_data || { echo "wmt14: $data is missing some of the files (see docs/WMT14.md)" >&2; exit 1; }

# The files in $data, downloaded or given: both sides alike, the paper's dev and test sets (the full
# 3,003-sentence newstest2014, not the 2,737-sentence filtered one), plain text (not tokenized).
for set in train newstest2013 newstest2014; do
  n_src=$(lines "$data/$set.$src")
  n_tgt=$(lines "$data/$set.$tgt")
  if [[ $n_src -ne $n_tgt ]]; then
    echo "wmt14: $data/$set.$src has $(thousands "$n_src") lines but $data/$set.$tgt $(thousands "$n_tgt")" >&2
    exit 1
  fi
  if [[ $set == train ]]; then
    paper=""
    [[ $n_src -eq ${expected[train]} ]] || paper=" (WMT14 as the paper used it: $(thousands "${expected[train]}"))"
    echo "wmt14: $(thousands "$n_src") training pairs in $data$paper"
  elif [[ $n_src -ne ${expected[$set]} ]]; then
    filtered=""
    [[ $set == newstest2014 && $n_src -eq 2737 ]] && filtered=" (the filtered set: the paper used the full one)"
    mismatches+=("$set: $(thousands "$n_src") lines, the paper's $set has $(thousands "${expected[$set]}")$filtered")
  fi
done
for side in $src $tgt; do
  # Moses-tokenized text has escaped quotes, @-@ or ##AT## dashes, and spaces before the final full stop.
  tokenized=$(grep -cE ' &(quot|apos|amp);|@-@|##AT##| \.$' "$data/newstest2014.$side" || true)
  if ((tokenized * 10 > $(lines "$data/newstest2014.$side"))); then
    mismatches+=("newstest2014.$side: $(thousands "$tokenized") lines look Moses-tokenized (plain text is expected: score-bleu tokenizes itself)")
  fi
done
mismatch_verdict "the test sets in $data"

# --- 2. train (builds the shared vocabulary into the run directory) ------------------------------
model_args=()
[[ $model == ema ]] && model_args=(--set "training.ema_decay=${EMA_DECAY:-0.9999}")
[[ $size == big ]] && model_args+=(--set model.d_model=1024 --set model.d_ff=4096 --set model.heads=16
                                  --set "model.dropout=$([[ $pair == en-fr ]] && echo 0.1 || echo 0.3)"
                                  --set training.max_steps=300000 --set checkpoint.every_steps=600)
# shellcheck disable=SC2206  # TRAIN_ARGS is a list of arguments
extra=(${TRAIN_ARGS:-})
train_args=(--config "$config" --run "$run" ${model_args[@]+"${model_args[@]}"}
            --set "data.train_source=$data/train.$src" --set "data.train_target=$data/train.$tgt"
            --set "data.valid_source=$data/newstest2013.$src" --set "data.valid_target=$data/newstest2013.$tgt"
            ${extra[@]+"${extra[@]}"})
# The resolved configuration, read before training: where it trains and what averaging will find.
resolved=$("$dragoman" train "${train_args[@]}" --dump-config)
setting() {  # setting SECTION KEY
  awk -v s="$1:" -v k="$2:" '$0 == s { on = 1; next } /^[^ ]/ { on = 0 } on && $1 == k { print $2 }' <<<"$resolved" |
    tr -d '"'
}
devices=$(setting training devices)
if [[ $devices == cpu* ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  hint=""
  ((gpus > 0)) && hint="; this machine has $gpus GPU(s): TRAIN_ARGS=\"--devices all\" trains on them"
  echo "wmt14: note: training on the CPU (training.devices $devices): the paper's $size model takes months there$hint"
fi
if [[ $model == averaged ]]; then
  max_steps=$(setting training max_steps)
  every=$(setting checkpoint every_steps)
  keep=$(setting checkpoint keep_last)
  if ((keep < average)); then
    echo "wmt14: checkpoint.keep_last $keep keeps fewer than the $average checkpoints to average" >&2
    exit 1
  fi
  if ((every <= 0)); then
    echo "wmt14: note: checkpoint.every_steps is off, so the $average averaged checkpoints are where the hardware's speed put them"
  elif ((max_steps > 0 && max_steps / every < average)); then
    echo "wmt14: training.max_steps $max_steps with checkpoint.every_steps $every makes $((max_steps / every)) checkpoints, fewer than the $average to average (lower checkpoint.every_steps, or MODEL=ema)" >&2
    exit 1
  fi
fi
"$dragoman" train "${train_args[@]}"

# --- 3-5. average (or the moving average), translate, score -------------------------------------
if [[ $model == averaged ]]; then
  have=$(find "$run/checkpoints" -maxdepth 1 -regex '.*/checkpoint-[0-9]+\.safetensors' | wc -l)
  if ((have < average)); then  # a run stopped early by its time budget or patience
    echo "wmt14: warning: the run has $have checkpoints: averaging those, not the paper's $average" >&2
    average=$have
  fi
  "$dragoman" average-checkpoints --run "$run" --last "$average" --output "$run/averaged.safetensors"
  weights=$run/averaged.safetensors
else
  weights=$run/checkpoints/checkpoint-last.ema.safetensors
fi
# shellcheck disable=SC2206  # TRANSLATE_ARGS is a list of arguments
translate_extra=(${TRANSLATE_ARGS:-})
"$dragoman" translate --model "$weights" --input "$data/newstest2014.$src" \
  --output "$run/newstest2014.$tgt" --beam 4 --length-penalty 0.6 --max-length-a 1 --max-length-b 50 \
  ${translate_extra[@]+"${translate_extra[@]}"}
echo "wmt14: newstest2014 translated with $weights; sacreBLEU's BLEU and chrF, then the paper's tokenized BLEU:"
"$dragoman" score-bleu --ref "$data/newstest2014.$tgt" --input "$run/newstest2014.$tgt" -m bleu,chrf \
  --paper "$tgt" | tee "$run/newstest2014.bleu"
