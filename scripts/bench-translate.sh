#!/usr/bin/env bash
# Benchmark: CPU translation speed and memory of `dragoman translate` on the dev set of the real
# English-German corpus in ../shared/data/bench-en-de (not part of this repository), for beam 4
# and greedy decoding at 1 and 2 threads. Prints a Markdown table (docs/PERFORMANCE.md records it).
#
# The model is the paper's base model (6+6 layers, d_model 512, shared 37,000-piece BPE vocabulary
# built on the corpus) after one training update, so its weights are as good as random: it hardly
# ever chooses EOS and every hypothesis runs to the length cap. The cap is therefore set to the
# source length (--max-length-a 1 --max-length-b 0), which is about the length of a real German
# translation of English (1.1 x); the table reports the tokens produced, so the work done is known.
# A trained model's speed on the same data is the second table (MODEL=path, e.g. the bench-train
# or demo run's model) with the paper's settings (cap at source + 50). When CTranslate2's wheel is
# installed, the last tables put it beside Dragoman on the same weights (fp32 and int8).
#   scripts/bench-translate.sh [LINES=1000] [BUILD_DIR=build] [DATA_DIR=../shared/data/bench-en-de]
#   environment: MODEL=a trained model file to measure as well; KEEP=dir to keep the work files;
#   CPU_PATH=avx2 to run both tools as on an AVX2-only CPU (ONEDNN_MAX_CPU_ISA=AVX2 for both tools'
#   oneDNN, DRAGOMAN_CPU_ISA=avx2, OPENBLAS_CORETYPE=Haswell, CT2_FORCE_CPU_ISA=AVX2); the table's
#   head names the instruction set each library runs
set -euo pipefail
case ${CPU_PATH:-} in
  "") ;;
  avx2) export ONEDNN_MAX_CPU_ISA=AVX2 DRAGOMAN_CPU_ISA=avx2 OPENBLAS_CORETYPE=Haswell CT2_FORCE_CPU_ISA=AVX2 ;;
  *) echo "bench-translate: CPU_PATH=$CPU_PATH: expected avx2 (or nothing: this CPU's best)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
lines=${1:-1000}
build_dir=${2:-build}
data=${3:-../shared/data/bench-en-de}
dragoman=$(realpath "$build_dir/src/dragoman")
[[ -x $dragoman ]] || { echo "bench-translate: $dragoman not found: build first (scripts/test.sh)" >&2; exit 1; }
[[ -f $data/dev.en.xz ]] || { echo "bench-translate: $data/dev.en.xz not found" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench-translate: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
for f in train.en train.de dev.en dev.de; do
  [[ -s $work/$f ]] || xz -dc "$data/$f.xz" >"$work/$f"
done
head -n "$lines" "$work/dev.en" >"$work/input.en"

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB"
echo "revision: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
# The instruction set each library runs: our row kernels, oneDNN's, OpenBLAS's kernels, int8's weights.
"$dragoman" --version | grep -E '^(CPU|int8)' || true
echo "input: the first $(wc -l <"$work/input.en") lines of $data/dev.en"

# The base model: a shared 37k BPE vocabulary, then one update on a few pairs.
if [[ ! -s $work/base.safetensors ]]; then
  "$dragoman" build-vocab --input "$work/train.en" "$work/train.de" --vocab-size 37000 \
    --input-sentence-size 200000 --output "$work/vocab" 2>"$work/vocab.log" || { cat "$work/vocab.log" >&2; exit 1; }
  head -n 2000 "$work/train.en" >"$work/small.en"
  head -n 2000 "$work/train.de" >"$work/small.de"
  "$dragoman" train --config configs/transformer-base.yaml --run "$work/base-run" \
    --set "data.train_source=$work/small.en" --set "data.train_target=$work/small.de" \
    --set "data.vocabulary=$work/vocab.model" --set training.max_steps=1 --set training.tokens_per_update=3125 \
    --set checkpoint.every_minutes=0 2>"$work/train.log" || { tail -n 20 "$work/train.log" >&2; exit 1; }
  cp "$work/base-run/checkpoints/checkpoint-last.safetensors" "$work/base.safetensors"
fi

# One translate run: NAME MODEL BEAM THREADS [translate options] -> a table row.
row() {
  local name=$1 model=$2 beam=$3 threads=$4
  shift 4
  /usr/bin/time -f "%M" -o "$work/rss" "$dragoman" translate --model "$model" --input "$work/input.en" \
    --output "$work/out.txt" --beam "$beam" --threads "$threads" "$@" 2>"$work/translate.log" ||
    { tail -n 20 "$work/translate.log" >&2; exit 1; }
  print_row "$name" "$beam" "$threads" "$work/translate.log"
}

# print_row NAME BEAM THREADS LOG: the table row of a run whose LOG ends with Dragoman's summary
# line ("translate: N lines, S source tokens, T target tokens (1-best) in X s: ...") or
# translate_ct2.py's ("ct2: ..." alike), with the peak RSS /usr/bin/time wrote to $work/rss.
print_row() {
  local name=$1 beam=$2 threads=$3 log=$4
  sed -n 's/.*\(translate\|ct2\): \([0-9]*\) lines, \([0-9]*\) source tokens, \([0-9]*\) target tokens (1-best) in \([0-9.]*\) s.*/\2 \3 \4 \5/p' \
    "$log" | {
    read -r n src tgt seconds
    awk -v name="$name" -v beam="$beam" -v threads="$threads" -v n="$n" -v src="$src" -v tgt="$tgt" -v s="$seconds" \
      -v rss="$(tail -n 1 "$work/rss")" \
      'BEGIN { printf "| %s | %d | %d | %d | %d | %d | %.1f | %.1f | %.0f | %.0f | %.0f |\n",
               name, beam, threads, n, src, tgt, s, n / s, src / s, tgt / s, rss / 1024 }'
  }
}

header() {
  echo
  echo "| model | beam | threads | lines | source tokens | target tokens | seconds | lines/s | source tok/s | target tok/s | peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
}

header
for beam in 4 1; do
  for threads in 1 2; do
    row "base (1 update), cap = source length" "$work/base.safetensors" "$beam" "$threads" \
      --max-length-a 1 --max-length-b 0
  done
done
if [[ -n ${MODEL:-} ]]; then
  header
  for beam in 4 1; do
    for threads in 1 2; do
      row "$(basename "$MODEL")" "$MODEL" "$beam" "$threads"
    done
  done
fi

# CTranslate2 on the same weights, in the same run (when its wheel is installed: pip install
# ctranslate2 sentencepiece safetensors numpy): the model converted by ../shared/bench/ct2, translated
# with Dragoman's batching and length caps; Dragoman with CTranslate2's one length normalisation
# (power) beside it, in fp32 and int8.
# The base model's rows have a fixed cap of 30 tokens for both (the same work per sentence).
ct2_tools=${CT2_TOOLS:-../shared/bench/ct2}
ct2_row() {
  local name=$1 dir=$2 beam=$3 threads=$4 compute=$5
  shift 5
  /usr/bin/time -f "%M" -o "$work/rss" python3 "$ct2_tools/translate_ct2.py" --model "$dir" --input "$work/input.en" \
    --output "$work/ct2-out.txt" --beam "$beam" --alpha 0.6 --threads "$threads" --compute-type "$compute" "$@" \
    >"$work/ct2.log" 2>&1 || { tail -n 20 "$work/ct2.log" >&2; exit 1; }
  print_row "$name" "$beam" "$threads" "$work/ct2.log"
}
if python3 -c 'import ctranslate2, sentencepiece, safetensors' 2>/dev/null && [[ -f $ct2_tools/translate_ct2.py ]]; then
  echo
  echo "CTranslate2 $(python3 -c 'import ctranslate2; print(ctranslate2.__version__)') on the same weights (power length normalisation):"
  ct2_isa=1
  models=("$work/base.safetensors")
  [[ -n ${MODEL:-} ]] && models+=("$MODEL")
  for model in "${models[@]}"; do
    # The base model's hypotheses all run to the cap: a fixed one (30 tokens) gives both tools the
    # same work, where a cap by source length would not (CTranslate2 has one cap per batch).
    caps=()
    [[ $model == "$work/base.safetensors" ]] && caps=(--max-length-a 0 --max-length-b 30)
    name=$(basename "$model" .safetensors)
    for quantization in float32 int8; do
      convert=(python3 "$ct2_tools/dragoman_to_ct2.py" "$model" "$work/ct2-$name-$quantization")
      [[ $quantization == int8 ]] && convert+=(--quantization int8)
      [[ -d $work/ct2-$name-$quantization ]] || "${convert[@]}" >"$work/ct2.log" 2>&1 ||
        { tail -n 20 "$work/ct2.log" >&2; exit 1; }
    done
    header
    for beam in 4 1; do
      for threads in 1 2; do
        row "$name: dragoman fp32" "$model" "$beam" "$threads" --length-normalization power "${caps[@]}"
        if ((ct2_isa)); then  # CTranslate2's log names its ISA and GEMM backend when it loads a model
          head -n 1 "$work/input.en" >"$work/one.en"
          CT2_VERBOSE=1 python3 "$ct2_tools/translate_ct2.py" --model "$work/ct2-$name-float32" --input "$work/one.en" \
            --output "$work/ct2-out.txt" --beam 1 --threads 1 >"$work/ct2-verbose.log" 2>&1 || true
          grep -E 'CPU:|ISA|backend|GEMM' "$work/ct2-verbose.log" | sed 's/^.*\] /  CTranslate2: /' | sort -u || true
          ct2_isa=0
        fi
        ct2_row "$name: ctranslate2 float32" "$work/ct2-$name-float32" "$beam" "$threads" float32 "${caps[@]}"
        row "$name: dragoman int8" "$model" "$beam" "$threads" --length-normalization power --precision int8 "${caps[@]}"
        ct2_row "$name: ctranslate2 int8" "$work/ct2-$name-int8" "$beam" "$threads" int8 "${caps[@]}"
      done
    done
  done
else
  echo
  echo "CTranslate2: not compared (pip install ctranslate2 sentencepiece safetensors numpy; tools in $ct2_tools)"
fi
