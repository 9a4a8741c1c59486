#!/usr/bin/env bash
# The main job on the demo data: installs the dependencies, builds Dragoman, builds the demo corpus
# from the Debian package trans-de-en (scripts/prepare-demo-data.sh -> data/demo/), trains
# configs/tiny.yaml on it (English -> German, a few minutes on two CPU cores), and prints the end of
# the training and dev loss curves. Running it again resumes the run (runs/demo) where it stopped;
# DEMO_FRESH=1 starts afresh. Translation of the demo test set joins here once `translate` exists.
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
         if ("valid_nll" in v) printf "  step %5d  dev      nll %.3f  ppl %8.1f\n", v["step"], v["valid_nll"], v["valid_ppl"]
         else printf "  step %5d  training loss %.3f  ppl %8.1f  %5.0f target tokens/s\n", v["step"], v["loss"], v["ppl"], v["tgt_tokens_per_s"] }'
}
grep -v valid_nll "$run/metrics.jsonl" | tail -n 3 | summary
grep valid_nll "$run/metrics.jsonl" | tail -n 3 | summary
echo
echo "== model files in $run/checkpoints"
ls -l "$run/checkpoints" | grep -v 'state\.safetensors' | tail -n +2
