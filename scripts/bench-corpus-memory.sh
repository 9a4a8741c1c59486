#!/usr/bin/env bash
# What a large training corpus costs in memory and time: the benchmark corpus (bench-en-de, 395,652
# pairs) resampled to PAIRS pairs (EN-FR's WMT14 size is 40,842,333), then
#   1. the shared unigram vocabulary of 32,000 pieces (as configs/wmt14-en-fr.yaml) on a sample of
#      each VOCAB_SAMPLES sentences (SentencePiece's input_sentence_size);
#   2. a first `dragoman train` start: the corpus checked, encoded into the run's cache, one update
#      (a tiny model, so that the memory is the data's);
#   3. a restart: the cache mapped, the next update, the training files read once more to hash them
#      (their record removed first, as a run that has none);
#   4. another restart: the files as recorded (size, time), not read; the cache mapped, an update.
# Prints a table: wall seconds and peak resident memory of each step, the text and cache sizes.
#   scripts/bench-corpus-memory.sh [PAIRS] [VOCAB_SAMPLES]
# Environment: DRAGOMAN (default build/src/dragoman), WORK (default /tmp/dragoman-corpus-bench: the
# corpus, about 130 bytes a pair, and the cache, about 8 bytes a token, go there), THREADS.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-40842333}
samples=${2:-1000000 2000000}
dragoman=${DRAGOMAN:-build/src/dragoman}
work=${WORK:-/tmp/dragoman-corpus-bench}
threads=${THREADS:-$(nproc)}
data=${BENCH_DATA:-../shared/data/bench-en-de}
[[ -x $dragoman ]] || { echo "bench-corpus-memory: $dragoman not found: build first" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench-corpus-memory: needs /usr/bin/time (apt install time)" >&2; exit 1; }
mkdir -p "$work"

# The corpus: the benchmark pairs repeated in a shuffled order per round, PAIRS lines a side.
if [[ ! -s $work/train.$pairs.en ]]; then
  xzcat "$data/train.en.xz" >"$work/base.en"
  xzcat "$data/train.de.xz" >"$work/base.de"
  paste "$work/base.en" "$work/base.de" >"$work/base.tsv"
  n=$(wc -l <"$work/base.tsv")
  rounds=$(((pairs + n - 1) / n))
  set +o pipefail  # head ends the rounds early
  for ((r = 0; r < rounds; r++)); do shuf --random-source=<(yes "$r") "$work/base.tsv"; done | head -n "$pairs" |
    awk -F'\t' -v en="$work/train.$pairs.en" -v de="$work/train.$pairs.de" '{ print $1 > en; print $2 > de }'
  set -o pipefail
  rm -f "$work/base.en" "$work/base.de" "$work/base.tsv"
fi
[[ $(wc -l <"$work/train.$pairs.en") -eq $pairs ]] || { echo "bench-corpus-memory: corpus not written" >&2; exit 1; }
text_bytes=$(($(stat -c %s "$work/train.$pairs.en") + $(stat -c %s "$work/train.$pairs.de")))

# measure LOG NAME COMMAND...: one table row: wall seconds and peak resident memory from
# /usr/bin/time, and the peak of its anonymous part (the process's own memory, without the mapped
# files' pages, which the page cache holds and shares), sampled from /proc every 0.1 s; the
# command's output in WORK/LOG.log.
rows=()
measure() {
  local log=$work/$1.log name=$2 pid anon=0 kib
  shift 2
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    for child in $(pgrep -P "$pid"); do
      kib=$(awk '/^RssAnon:/ { print $2 }' "/proc/$child/status" 2>/dev/null || echo 0)
      ((${kib:-0} > anon)) && anon=$kib
    done
    sleep 0.1
  done
  wait "$pid" || { tail -n 20 "$log" >&2; exit 1; }
  read -r seconds kib <"$work/time"
  rows+=("$(printf '| %s | %.1f | %.0f | %.0f |' "$name" "$seconds" "$((kib / 1024))" "$((anon / 1024))")")
}

for s in $samples; do
  measure "vocab-$s" "build-vocab unigram 32k, sample $s sentences" "$dragoman" build-vocab --model-type unigram \
    --vocab-size 32000 \
    --input-sentence-size "$s" --threads "$threads" --input "$work/train.$pairs.en" "$work/train.$pairs.de" \
    --output "$work/vocab-$s"
done
vocab=$work/vocab-$(echo "$samples" | awk '{ print $1 }').model
run=$work/run-$pairs
rm -rf "$run"
cat >"$work/tiny.yaml" <<YAML
model: {d_model: 64, d_ff: 128, heads: 2, encoder_layers: 1, decoder_layers: 1}
data: {train_source: $work/train.$pairs.en, train_target: $work/train.$pairs.de, vocabulary: $vocab,
       max_length: 250}
training: {max_tokens: 2000, warmup_steps: 10, log_every: 1, valid_every: 0, threads: $threads}
checkpoint: {every_minutes: 0}
YAML
measure first "first start: check, encode $pairs pairs into the cache, 1 update" "$dragoman" train \
  -c "$work/tiny.yaml" --run "$run" --set training.max_steps=1
rm "$run/train.inputs.json"  # as a run from before the record: the files read to hash them
measure restart "restart: the files hashed, the cache mapped, 1 update" "$dragoman" train --run "$run" \
  --set training.max_steps=2
measure restart2 "restart: the files as recorded, the cache mapped, 1 update" "$dragoman" train --run "$run" \
  --set training.max_steps=3
cache_bytes=$(stat -c %s "$run/train.cache")

echo "corpus: $pairs pairs ($(numfmt --to=iec "$text_bytes") of text), cache $(numfmt --to=iec "$cache_bytes"); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(free -g | awk '/Mem:/ { print $2 }') GiB"
echo "| step | wall s | peak RSS MiB | of it anonymous MiB |"
echo "|---|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
grep -h "corpus: encoding\|training pairs:\|not read again\|step [123] " "$work/first.log" "$work/restart.log" \
  "$work/restart2.log" || true
