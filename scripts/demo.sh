#!/usr/bin/env bash
# The main job on the demo data, the paper's pipeline end to end: installs the dependencies, builds
# Dragoman, builds the demo corpus from Debian's own English-German translations
# (scripts/prepare-demo-data.sh -> data/demo/), trains configs/demo.yaml on it (English -> German, at
# most 10 minutes on two CPU cores, dev BLEU at each validation), averages the last checkpoints,
# chooses the beam and the length penalty on the dev set, translates the test set with beam search
# with the last and the averaged model, prints a few translations and scores both with score-bleu
# (BLEU and chrF, against the paper's beam and length penalty and copying the source).
# Running it again resumes the run (runs/demo) where it stopped; DEMO_FRESH=1 starts afresh.
#   BUILD_DIR=build  JOBS=2  DEMO_RUN=runs/demo  DEMO_MINUTES=10 (training's time budget:
#   training.max_minutes; the run measures its pace and fixes the updates that fit, annealed to zero)
#   DEMO_STEPS=(a cap on the updates)  DEMO_SET="training.threads=1 ..." (more --set overrides)
#   DEMO_SAMPLES=3 (translations printed per source)  DEMO_BEAMS="4 6"  DEMO_ALPHAS="0.6 1.0 1.5 2.0"
#   (the beams and length penalties tried on the dev set; DEMO_BEAMS=4 DEMO_ALPHAS=0.6: the paper's)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" -j "${JOBS:-2}" --target dragoman
dragoman=$build_dir/src/dragoman
run=${DEMO_RUN:-runs/demo}
minutes=${DEMO_MINUTES:-10}

echo
"$dragoman" --version
echo
bash scripts/prepare-demo-data.sh data/demo

train_args=(--config configs/demo.yaml --run "$run" --max-minutes "$minutes")
[[ -n ${DEMO_STEPS:-} ]] && train_args+=(--set "training.max_steps=$DEMO_STEPS")
for setting in ${DEMO_SET:-}; do train_args+=(--set "$setting"); done
[[ ${DEMO_FRESH:-0} == 1 ]] && train_args+=(--overwrite)
echo
echo "== dragoman train ${train_args[*]}"
# The budget is train's own (training.max_minutes): after 1-8 % of it the run knows its pace, fixes
# the number of updates that fits and decays the learning rate to zero at the last one (after the
# peak held for 60 % of them: training.lr_hold; at 55 % of the budget, the peak still held, it
# measures its pace again and fixes the count again), so a slow machine makes fewer updates but still
# ends annealed. Building the vocabulary and encoding the corpus come before the budget's clock
# starts. timeout is only a safety net (SIGINT: train saves its state and exits 130; running the
# demo again resumes it).
start=$SECONDS
status=0
# --preserve-status: train's own exit status (130 after SIGINT's save), so that a crash is not
# mistaken for the safety net's stop.
timeout --preserve-status --signal=INT --kill-after=60 "$((minutes * 60 + 300))" "$dragoman" train "${train_args[@]}" ||
  status=$?
if ((status == 130)); then
  echo "(training stopped by a signal; its state is saved, running the demo again resumes it)"
elif ((status != 0)); then
  exit "$status"
fi
echo "(train took $((SECONDS - start)) s)"
# What the budget chose on this machine, and what that means for the scores below.
awk '/"budget_updates"|"budget_refined_updates"/ {
    gsub(/[{}"]/, ""); n = split($0, kv, ","); delete v
    for (i = 1; i <= n; i++) { split(kv[i], p, ":"); v[p[1]] = p[2] }
    if ("budget_refined_updates" in v) { refined = v["budget_refined_updates"]; refined_at = v["step"]; next }
    tps = v["calibration_tgt_tokens_per_s"]; fixed = v["budget_updates"]; minutes = v["budget_minutes"]
    seconds = v["calibration_update_seconds"] }
  END {
    if (fixed == "") exit
    printf "\nThis machine trained at %.0f target tokens/s (measured over 1-8 %% of the budget): %d updates\n", tps, fixed
    printf "fit the %g-minute budget, each about %.3f s (validations and checkpoints counted besides)", minutes, seconds
    if (refined != "") printf ";\nthe pace of the updates up to %d (55 %% of the budget, the peak still held) fixed it again at %d", refined_at, refined
    printf ".\nThe learning rate decays to zero at the last update. What the README measured with this config:\n"
    printf "12,511 updates at 21,000 tokens/s (test BLEU 24.5), 6,691 at 11,900 (22.6), 2,622 at 4,750 (17.2),\n"
    printf "about 2,000 at 3,570 (14.9-15.2), with the beam and length penalty chosen on the dev set below:\n"
    printf "a slower machine makes fewer updates and scores lower, a faster one more and higher.\n" }' "$run/metrics.jsonl"

echo
echo "== the end of the loss curves ($run/metrics.jsonl; scripts/plot-metrics.py $run draws them)"
# metrics.jsonl lines are flat JSON objects of numbers: print a few fields of the last ones.
summary() {
  awk '{ gsub(/[{}"]/, ""); n = split($0, kv, ","); delete v
         for (i = 1; i <= n; i++) { split(kv[i], p, ":"); v[p[1]] = p[2] }
         if ("valid_nll" in v) printf "  step %5d  dev      nll %.3f  ppl %8.1f%s\n", v["step"], v["valid_nll"], v["valid_ppl"],
                                      ("valid_bleu" in v) ? sprintf("  BLEU %.2f", v["valid_bleu"]) : ""
         else printf "  step %5d  training loss %.3f  ppl %8.1f  %5.0f target tokens/s\n", v["step"], v["loss"], v["ppl"], v["tgt_tokens_per_s"] }'
}
awk '!/valid_nll/' "$run/metrics.jsonl" | tail -n 3 | summary
awk '/valid_nll/' "$run/metrics.jsonl" | tail -n 8 | summary
# The paper averages the last 5 checkpoints (base); a short run may have fewer.
mapfile -t checkpoints < <(find "$run/checkpoints" -name 'checkpoint-[0-9]*.state.safetensors' | sort)
last=${#checkpoints[@]}
((last > 0)) || { echo "demo: $run has no regular checkpoint to average yet (run the demo again to train on)" >&2; exit 1; }
((last > 5)) && last=5
steps_of() { basename "$1" | sed 's/checkpoint-0*\([0-9][0-9]*\)\..*/\1/'; }
first_step=$(steps_of "${checkpoints[${#checkpoints[@]} - last]}")
last_step=$(steps_of "${checkpoints[${#checkpoints[@]} - 1]}")
# checkpoint-last is a hard link to the newest checkpoint: a regular one, or a signal's interrupted-STEP.
final_step=$(find "$run/checkpoints" -samefile "$run/checkpoints/checkpoint-last.safetensors" ! -name 'checkpoint-last*' |
  sed -n 's/.*-0*\([0-9][0-9]*\)\.safetensors$/\1/p' | head -n 1)
echo
echo "== dragoman average-checkpoints --run $run --last $last   (updates $first_step-$last_step)"
"$dragoman" average-checkpoints --run "$run" --last "$last" --output "$run/averaged.safetensors"

# The beam and the length penalty, chosen on the dev set as the paper chose its beam 4 and alpha 0.6:
# a short run's model ends its translations early (80-90 % of the references' length at alpha 0.6),
# and a larger alpha lengthens them (docs/DECODING.md, "Choosing the beam and the length penalty").
beams=${DEMO_BEAMS:-4 6}
alphas=${DEMO_ALPHAS:-0.6 1.0 1.5 2.0}
echo
echo "== scripts/tune-decoding.sh: translate's beam and length penalty (GNMT alpha) chosen on"
echo "   data/demo/dev.en ($(wc -l <data/demo/dev.en) sentences) with the last model: beams $beams, alphas $alphas"
# (assigned first: a failure inside a here-string's substitution would not stop the script)
# The chosen settings are also written into the averaged model (--save-to: dragoman
# decoding-defaults), so that it translates with them given no options, here and later.
chosen=$(bash scripts/tune-decoding.sh --dragoman "$dragoman" --beams "$beams" --alphas "$alphas" \
  --model "$run/checkpoints/checkpoint-last.safetensors" --source data/demo/dev.en --reference data/demo/dev.de \
  --keep "$run/dev-decoding" --save-to "$run/averaged.safetensors")
read -r -a decoding <<<"$chosen"
echo "$run/averaged.safetensors now recommends ${decoding[*]}: 'dragoman translate -m $run/averaged.safetensors'"
echo "uses them when given no options (dragoman decoding-defaults shows them)"

test_lines=$(wc -l <data/demo/test.en)
echo
echo "== dragoman translate: data/demo/test.en ($test_lines sentences held out of training), ${decoding[*]}"
echo "   (the last checkpoint given them as options, the averaged model with none: its own)"
for name in last averaged; do
  options=()
  model=$run/averaged.safetensors
  [[ $name == last ]] && model=$run/checkpoints/checkpoint-last.safetensors && options=("${decoding[@]}")
  start=$SECONDS
  "$dragoman" translate --model "$model" --input data/demo/test.en --output "$run/test.$name.de" "${options[@]}"
  echo "  the $name model: $((SECONDS - start)) s"
done
paper=''
if [[ ${decoding[*]} != "--beam 4 --length-penalty 0.6" ]]; then
  # The paper's beam 4 and alpha 0.6 beside it, for comparison with runs scored that way.
  paper=$run/test.last.paper.de
  "$dragoman" translate --model "$run/checkpoints/checkpoint-last.safetensors" --input data/demo/test.en \
    --output "$paper" --beam 4 --length-penalty 0.6
fi
echo
echo "== dragoman score-bleu --ref data/demo/test.de -m bleu,chrf"
score() { "$dragoman" score-bleu --ref "$1" --input "$2" --score-only --width 2; }
echo "the last checkpoint (update $final_step, $run/test.last.de):"
"$dragoman" score-bleu --ref data/demo/test.de --input "$run/test.last.de" -m bleu,chrf
echo "the average of the last $last checkpoints (updates $first_step-$last_step, $run/test.averaged.de):"
"$dragoman" score-bleu --ref data/demo/test.de --input "$run/test.averaged.de" -m bleu,chrf
if [[ -n $paper ]]; then
  echo "the last checkpoint with the paper's --beam 4 --length-penalty 0.6 instead ($paper):"
  "$dragoman" score-bleu --ref data/demo/test.de --input "$paper" -m bleu,chrf
fi
echo "baseline, the English source copied as the output:"
"$dragoman" score-bleu --ref data/demo/test.de --input data/demo/test.en -m bleu,chrf
bleu_last=$(score data/demo/test.de "$run/test.last.de")
bleu_avg=$(score data/demo/test.de "$run/test.averaged.de")
better=last
awk -v a="$bleu_avg" -v l="$bleu_last" 'BEGIN { exit !(a > l) }' && better=averaged

# The test set by the source of its sentences (data/demo/test.origin): the Debian texts are one
# technical domain that the model learns in minutes; the dictionary's idiomatic examples are
# general language, far harder for so small a model and so short a training.
echo
echo "BLEU by source of the test sentences:"
mkdir -p "$run/by-origin"
printf '  %-13s %9s %8s %9s %7s\n' source sentences last averaged copied
for origin in descriptions catalogs dictionary; do
  for name in en de last.de averaged.de; do
    file=data/demo/test.$name
    [[ $name == *.de ]] && file=$run/test.$name
    paste -d '\t' data/demo/test.origin "$file" |
      awk -F'\t' -v o="$origin" '$1 == o { print substr($0, length(o) + 2) }' >"$run/by-origin/$origin.$name"
  done
  printf '  %-13s %9d %8s %9s %7s\n' "$origin" "$(wc -l <"$run/by-origin/$origin.en")" \
    "$(score "$run/by-origin/$origin.de" "$run/by-origin/$origin.last.de")" \
    "$(score "$run/by-origin/$origin.de" "$run/by-origin/$origin.averaged.de")" \
    "$(score "$run/by-origin/$origin.de" "$run/by-origin/$origin.en")"
done

samples=${DEMO_SAMPLES:-3}
echo
echo "The first $samples test sentences of each source (the test set is in hash order, a random sample),"
echo "translated by the better model ($better):"
for origin in descriptions catalogs dictionary; do
  echo "  -- $origin"
  # (awk, not head, picks the first lines: head would end paste with SIGPIPE, fatal under pipefail)
  paste "$run/by-origin/$origin.en" "$run/by-origin/$origin.de" "$run/by-origin/$origin.$better.de" |
    awk -F'\t' -v n="$samples" 'NR <= n { printf "  source:      %s\n  reference:   %s\n  translation: %s\n\n", $1, $2, $3 }'
done

# Which model is better, and whether training had flattened: the dev NLL at the validations just
# before and at the end of the averaged window.
window=$(awk -v from="$first_step" '/valid_nll/ {
    match($0, /"step":[0-9]+/); s = substr($0, RSTART + 7, RLENGTH - 7) + 0
    match($0, /"valid_nll":[-0-9.e+]+/); nll = substr($0, RSTART + 12, RLENGTH - 12) + 0
    if (s <= from || a == "") { a = s; x = nll } b = s; y = nll }
  END { if (b != "" && b > a) printf "The dev NLL went from %.3f at update %d to %.3f at update %d.", x, a, y, b }' "$run/metrics.jsonl")
echo
awk -v last="$bleu_last" -v avg="$bleu_avg" -v n="$last" -v a="$first_step" -v b="$last_step" -v window="$window" 'BEGIN {
  if (avg > last) printf "The average of the last %d checkpoints (updates %d-%d) is better: BLEU %.2f against %.2f for the last one.\n", n, a, b, avg, last
  else if (avg < last) printf "The last checkpoint is better: BLEU %.2f against %.2f for the average of the last %d (updates %d-%d).\n", last, avg, n, a, b
  else printf "The last checkpoint and the average of the last %d score the same BLEU, %.2f.\n", n, last
  if (window != "") print window
  print "Averaging helps once training has flattened: the checkpoints then scatter around one optimum, and"
  print "their mean lies nearer its centre than any of them (the paper averages checkpoints written 10"
  print "minutes apart at the end of 12 hours). While the loss still falls fast the older checkpoints are"
  print "just worse models and the average lags behind the last one; a window that is short against the"
  print "time the model takes to improve averages out the noise of the last updates and can still win."
  print "configs/demo.yaml decays the learning rate linearly to zero at its last update (training.lr_decay,"
  print "after the peak held for 60 % of the updates: training.lr_hold): the last updates are small and its"
  print "last checkpoints close together, so their average changes little."
}'
