#!/usr/bin/env bash
# The main job on the demo data, the paper's pipeline end to end: installs the dependencies, builds
# Dragoman, builds the demo corpus from the Debian package trans-de-en (scripts/prepare-demo-data.sh
# -> data/demo/), trains configs/tiny.yaml on it (English -> German, a few minutes on two CPU cores,
# with dev BLEU at each validation), averages the last checkpoints, translates the test set with beam
# search and scores it with score-bleu (BLEU and chrF, against copying the source as a baseline).
# Running it again resumes the run (runs/demo) where it stopped; DEMO_FRESH=1 starts afresh.
#   BUILD_DIR=build  JOBS=2  DEMO_STEPS=(from configs/tiny.yaml)  DEMO_RUN=runs/demo
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" -j "${JOBS:-2}" --target dragoman
dragoman=$build_dir/src/dragoman
run=${DEMO_RUN:-runs/demo}

echo
"$dragoman" --version
echo
bash scripts/prepare-demo-data.sh data/demo

train_args=(--config configs/tiny.yaml --run "$run")
[[ -n ${DEMO_STEPS:-} ]] && train_args+=(--set "training.max_steps=$DEMO_STEPS")
[[ ${DEMO_FRESH:-0} == 1 ]] && train_args+=(--overwrite)
echo
echo "== dragoman train ${train_args[*]}"
"$dragoman" train "${train_args[@]}"

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
grep -v valid_nll "$run/metrics.jsonl" | tail -n 3 | summary
grep valid_nll "$run/metrics.jsonl" | tail -n 3 | summary
# The paper averages the last 5 checkpoints (base); a short run may have fewer.
last=$(find "$run/checkpoints" -name 'checkpoint-[0-9]*.state.safetensors' | wc -l)
((last > 5)) && last=5
echo
echo "== dragoman average-checkpoints --run $run --last $last"
"$dragoman" average-checkpoints --run "$run" --last "$last" --output "$run/averaged.safetensors"

echo
echo "== dragoman translate: data/demo/test.en ($(wc -l <data/demo/test.en) sentences), beam 4, length penalty 0.6"
for name in averaged last; do
  model=$run/averaged.safetensors
  [[ $name == last ]] && model=$run/checkpoints/checkpoint-last.safetensors
  "$dragoman" translate --model "$model" --input data/demo/test.en --output "$run/test.$name.de" \
    --beam 4 --length-penalty 0.6
done
# (awk, not head, picks the first lines: head would end paste with SIGPIPE, fatal under pipefail)
paste data/demo/test.en data/demo/test.de "$run/test.averaged.de" |
  awk -F'\t' 'NR <= 5 { printf "  source:      %s\n  reference:   %s\n  translation: %s\n\n", $1, $2, $3 }'

echo "== dragoman score-bleu --ref data/demo/test.de -m bleu,chrf"
echo "the average of the last $last checkpoints ($run/test.averaged.de):"
"$dragoman" score-bleu --ref data/demo/test.de --input "$run/test.averaged.de" -m bleu,chrf
echo "the last checkpoint alone ($run/test.last.de):"
"$dragoman" score-bleu --ref data/demo/test.de --input "$run/test.last.de" -m bleu,chrf
echo "baseline, the English source copied as the output:"
"$dragoman" score-bleu --ref data/demo/test.de --input data/demo/test.en -m bleu,chrf
