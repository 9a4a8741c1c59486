#!/usr/bin/env bash
# Benchmark: CPU training on the real English-German corpus of ../shared/data/bench-en-de (395k
# pairs, not part of this repository): configs/tiny.yaml's model with an 8,000-piece BPE
# vocabulary, trained for STEPS updates on THREADS threads. Prints the run's setup and a Markdown
# table of the training loss, dev loss/perplexity and target tokens/second along the way
# (docs/PERFORMANCE.md records it). Needs a built tree (scripts/test.sh).
#   scripts/bench-train.sh [STEPS=400] [THREADS=2] [BUILD_DIR=build] [DATA_DIR=../shared/data/bench-en-de]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-400}
threads=${2:-2}
build_dir=${3:-build}
data=${4:-../shared/data/bench-en-de}
dragoman=$build_dir/src/dragoman
[[ -x $dragoman ]] || { echo "bench-train: $dragoman not found: build first (scripts/test.sh)" >&2; exit 1; }
[[ -f $data/train.en.xz ]] || { echo "bench-train: $data/train.en.xz not found" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench-train: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in train.en train.de dev.en dev.de; do xz -dc "$data/$f.xz" >"$work/$f"; done

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB"
echo "revision: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$dragoman" --version | grep -E '^(CPU|int8)' || true  # the instruction set each CPU library runs
echo "corpus: $(wc -l <"$work/train.en") training pairs, $(wc -l <"$work/dev.en") dev pairs ($data)"
start=$(date +%s)
/usr/bin/time -f "%M" -o "$work/rss" "$dragoman" train --config configs/tiny.yaml --run "$work/run" \
  --set "data.train_source=$work/train.en" --set "data.train_target=$work/train.de" \
  --set "data.valid_source=$work/dev.en" --set "data.valid_target=$work/dev.de" \
  --set data.vocab_size=8000 --set data.vocab_sample=200000 \
  --set "training.max_steps=$steps" --set "training.threads=$threads" \
  --set training.log_every=25 --set training.valid_every=50 --set training.valid_bleu=false \
  --set checkpoint.every_steps=0 --set checkpoint.every_minutes=0 2>"$work/train.log" ||
  { tail -n 20 "$work/train.log" >&2; exit 1; }
end=$(date +%s)
grep -E "training pairs:|parameters," "$work/train.log" | sed 's/^.*info: train: /setup: /'
echo "wall time: $((end - start)) s for $steps updates (vocabulary, encoding, training, validation); peak RSS $(($(tail -n 1 "$work/rss") / 1024)) MiB"
echo
echo "| step | training loss | dev NLL | dev perplexity | target tokens/s |"
echo "|---:|---:|---:|---:|---:|"
# metrics.jsonl: flat JSON objects of numbers, training and validation records by step.
awk '{ gsub(/[{}"]/, ""); n = split($0, kv, ","); delete v
       for (i = 1; i <= n; i++) { split(kv[i], p, ":"); v[p[1]] = p[2] }
       s = v["step"] + 0
       if ("valid_nll" in v) { nll[s] = v["valid_nll"]; ppl[s] = v["valid_ppl"] }
       else { loss[s] = v["loss"]; speed[s] = v["tgt_tokens_per_s"] }
       if (!(s in seen)) { seen[s] = 1; order[++count] = s } }
     END { for (i = 1; i <= count; i++) { s = order[i]; if (!(s in nll)) continue
             printf "| %d | %.3f | %.3f | %.1f | %.0f |\n", s, loss[s], nll[s], ppl[s], speed[s] } }' \
  "$work/run/metrics.jsonl"
