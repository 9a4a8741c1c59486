#!/usr/bin/env bash
# Back-translation on the demo corpus, measured (docs/BACKTRANSLATION.md): the training pairs are
# split into a parallel part and a part whose German side alone is kept as monolingual text
# (MONO_PERCENT of the lines, spread over the corpus); then
#   1. the reverse model (German -> English) is trained on the parallel part;
#   2. it translates the monolingual German into synthetic English, once per METHODS entry:
#      sampling (unrestricted, Edunov et al. 2018's best), top10 (top-k 10), beam (beam 4),
#      noise (beam 4 with Edunov's noise: words deleted, blanked, swapped);
#   3. the forward model (English -> German) is trained on the parallel part alone, and on the
#      parallel part plus each synthetic set, its sources tagged "<BT> " (Caswell et al. 2019),
#      every model for the same training budget;
#   4. each forward model translates the test set (beam 4, alpha 0.6) and a table of BLEU and chrF
#      is printed.
#   scripts/backtranslate.sh [OUT_DIR]      (default runs/backtranslate)
#   DATA=data/demo (train/dev/test .en/.de)  CONFIG=configs/demo.yaml  MINUTES=10 (each model's
#   budget: training.max_minutes)  STEPS (instead of MINUTES: updates)  MONO_PERCENT=50
#   METHODS="sampling beam"  DRAGOMAN=build/src/dragoman  THREADS (default: all cores)
# Needs a built dragoman and the data (scripts/prepare-demo-data.sh makes data/demo).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/backtranslate}
data=${DATA:-data/demo}
config=${CONFIG:-configs/demo.yaml}
minutes=${MINUTES:-10}
steps=${STEPS:-}
mono_percent=${MONO_PERCENT:-50}
methods=${METHODS:-sampling beam}
dragoman=${DRAGOMAN:-build/src/dragoman}
threads=${THREADS:-$(nproc)}
die() { echo "backtranslate: $*" >&2; exit 1; }
[[ -x $dragoman ]] || die "$dragoman is not built (scripts/test.sh builds it, or set DRAGOMAN)"
for split in train dev test; do
  for side in en de; do
    [[ -f $data/$split.$side ]] || die "$data/$split.$side is missing (scripts/prepare-demo-data.sh makes data/demo)"
  done
done
[[ $mono_percent =~ ^[0-9]+$ && $mono_percent -ge 1 && $mono_percent -le 99 ]] ||
  die "MONO_PERCENT must be a whole number from 1 to 99, got '$mono_percent'"
for method in $methods; do
  case $method in
    sampling | top10 | beam | noise) ;;
    *) die "unknown method '$method' in METHODS (expected sampling, top10, beam, noise)" ;;
  esac
done
mkdir -p "$out/data"
out=$(cd "$out" && pwd)
data=$(cd "$data" && pwd)
budget_args=(--max-minutes "$minutes")
budget="$minutes min"
if [[ -n $steps ]]; then
  budget_args=(--set "training.max_minutes=0" --set "training.max_steps=$steps")
  budget="$steps updates"
fi

# The split: line n is monolingual when n mod 100 < MONO_PERCENT (the corpus's parts are spread
# over both sides of the split; the demo corpus is ordered by origin).
awk -v p="$mono_percent" -v o="$out/data" 'NR % 100 < p { print > (o "/mono.de") } NR % 100 >= p { print > (o "/parallel.de") }' \
  "$data/train.de"
awk -v p="$mono_percent" -v o="$out/data" 'NR % 100 >= p { print > (o "/parallel.en") }' "$data/train.en"
echo "backtranslate: $(wc -l <"$out/data/parallel.en") parallel pairs, $(wc -l <"$out/data/mono.de") monolingual German lines"

# train NAME SRC TGT VALID_SRC VALID_TGT: a model on these files with CONFIG's recipe and the budget
# (a run already finished is kept: running the script again resumes where it stopped).
train() {
  local name=$1
  echo "== $name: train on $(wc -l <"$2") pairs, $budget"
  "$dragoman" train -c "$config" --run "$out/$name" --no-progress "${budget_args[@]}" \
    --set "data.train_source=$2" --set "data.train_target=$3" \
    --set "data.valid_source=$4" --set "data.valid_target=$5" --set "training.threads=$threads" \
    >>"$out/$name.log" 2>&1 || { tail -n 20 "$out/$name.log" >&2; die "training $name failed ($out/$name.log)"; }
  [[ -f $out/$name/checkpoints/checkpoint-last.safetensors ]] || die "the $name run wrote no checkpoint"
  grep -E "(done|already finished) at step" "$out/$name.log" | tail -n 1 || true
}
model() { echo "$out/$1/checkpoints/checkpoint-last.safetensors"; }

# 1. The reverse model.
train reverse "$out/data/parallel.de" "$out/data/parallel.en" "$data/dev.de" "$data/dev.en"

# 2. The synthetic sources, tagged; pairs whose synthetic side is empty are left out.
for method in $methods; do
  case $method in
    sampling) options=(--sampling --seed 1) ;;
    top10) options=(--sampling --top-k 10 --seed 1) ;;
    beam) options=(--beam 4) ;;
    noise) options=(--beam 4 --noise --seed 1) ;;
  esac
  echo "== synthetic English by $method: translate ${options[*]}"
  start=$SECONDS
  "$dragoman" translate -m "$(model reverse)" -i "$out/data/mono.de" -o "$out/data/synthetic.$method.en" \
    --threads "$threads" --no-progress "${options[@]}" 2>"$out/translate.$method.log" ||
    { tail -n 5 "$out/translate.$method.log" >&2; die "back-translation by $method failed"; }
  echo "   $(wc -l <"$out/data/mono.de") lines in $((SECONDS - start)) s"
  paste -d '\t' "$out/data/synthetic.$method.en" "$out/data/mono.de" |
    awk -F'\t' -v s="$out/data/train.$method.en" -v t="$out/data/train.$method.de" \
      '$1 != "" && $2 != "" { print "<BT> " $1 > s; print $2 > t }' -
  cat "$out/data/parallel.en" >>"$out/data/train.$method.en"
  cat "$out/data/parallel.de" >>"$out/data/train.$method.de"
done

# 3. The forward models: the parallel part alone, and with each synthetic set.
train bitext "$out/data/parallel.en" "$out/data/parallel.de" "$data/dev.en" "$data/dev.de"
for method in $methods; do
  train "bt-$method" "$out/data/train.$method.en" "$out/data/train.$method.de" "$data/dev.en" "$data/dev.de"
done

# 4. Test BLEU and chrF of each forward model.
echo
echo "Test BLEU / chrF of the forward model ($(wc -l <"$data/test.en") test sentences, beam 4, alpha 0.6; each model"
echo "trained for $budget on $threads thread(s); synthetic sources tagged \"<BT> \"):"
printf '  %-44s %14s %8s %8s %8s\n' "training data" "pairs" updates BLEU chrF
for name in bitext $(for m in $methods; do echo "bt-$m"; done); do
  "$dragoman" translate -m "$(model "$name")" -i "$data/test.en" -o "$out/$name.test.de" --threads "$threads" \
    --no-progress --beam 4 --length-penalty 0.6 2>/dev/null
  bleu=$("$dragoman" score-bleu --ref "$data/test.de" --input "$out/$name.test.de" --score-only --width 2)
  chrf=$("$dragoman" score-bleu --ref "$data/test.de" --input "$out/$name.test.de" --metrics chrf --score-only --width 2)
  updates=$(sed -n 's/.*\(done\|already finished\) at step \([0-9]*\).*/\2/p' "$out/$name.log" | tail -n 1)
  case $name in
    bitext) what="parallel only" ; pairs=$(wc -l <"$out/data/parallel.en") ;;
    *) what="parallel + back-translated (${name#bt-})"; pairs=$(wc -l <"$out/data/train.${name#bt-}.en") ;;
  esac
  printf '  %-44s %14s %8s %8s %8s\n' "$what" "$pairs" "${updates:-?}" "$bleu" "$chrf"
done
