#!/usr/bin/env bash
# Benchmark: CPU translation speed of `dragoman translate` beside CTranslate2 on the same weights
# (fp32 and int8, greedy and beam 4, 1 and 2 threads), with and without a vocabulary shortlist
# (CTranslate2: its vocabulary map, the same lists), on the real English-German corpus in
# ../shared/data/bench-en-de (not part of this repository). Prints one Markdown table per model:
# each tool's seconds and CTranslate2's time over Dragoman's (above 1: Dragoman is faster).
#
# Models: the paper's base model (6+6 layers, d_model 512, a 37,000-piece BPE vocabulary built on the
# corpus) and a small one of the demo's shape (2+2 layers, d_model 128, 8,000 pieces), each after
# one training update: their weights are as good as random, so every hypothesis runs to the length
# cap, fixed at 30 tokens for both tools (the same work per sentence). MODEL=a trained model file
# adds its table with the paper's cap (source + 50), on INPUT (default: the corpus's dev lines), and
# the BLEU of every variant against REFERENCE when given. The shortlist is built by `dragoman
# build-shortlist` on the corpus's training pairs (SHORTLIST_ARGS, SHORTLIST_PAIRS) unless
# SHORTLIST=file gives MODEL's; CTranslate2 reads the same file as its vmap.txt.
#   scripts/bench-translate.sh [LINES=1000] [BUILD_DIR=build] [DATA_DIR=../shared/data/bench-en-de]
#   (the base model translates the first LINES dev lines, the small one those lines 4 times over)
#   environment: MODEL, INPUT, REFERENCE, SHORTLIST as above; MODELS="base small" (the untrained
#   ones to run); KEEP=dir to keep the work files; CPU_PATH=avx2 to run both tools as on an
#   AVX2-only CPU (ONEDNN_MAX_CPU_ISA=AVX2 for both tools' oneDNN, DRAGOMAN_CPU_ISA=avx2,
#   OPENBLAS_CORETYPE=Haswell, CT2_FORCE_CPU_ISA=AVX2 and MKL_ENABLE_INSTRUCTIONS=AVX2 for the MKL
#   inside CTranslate2); the head names the instruction set each
#   library runs. Needs pip's ctranslate2, sentencepiece, safetensors and numpy (else Dragoman only).
set -euo pipefail
case ${CPU_PATH:-} in
  "") ;;
  # (CT2_FORCE_CPU_ISA holds CTranslate2's own kernels; the MKL inside it needs MKL_ENABLE_INSTRUCTIONS,
  # else its GEMMs run AVX-512 on an AVX-512 CPU)
  avx2) export ONEDNN_MAX_CPU_ISA=AVX2 DRAGOMAN_CPU_ISA=avx2 OPENBLAS_CORETYPE=Haswell CT2_FORCE_CPU_ISA=AVX2 \
    MKL_ENABLE_INSTRUCTIONS=AVX2 ;;
  *) echo "bench-translate: CPU_PATH=$CPU_PATH: expected avx2 (or nothing: this CPU's best)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
lines=${1:-1000}
build_dir=${2:-build}
data=${3:-../shared/data/bench-en-de}
dragoman=$(realpath "$build_dir/src/dragoman")
[[ -x $dragoman ]] || { echo "bench-translate: $dragoman not found: build first (scripts/test.sh)" >&2; exit 1; }
[[ -f $data/dev.en.xz ]] || { echo "bench-translate: $data/dev.en.xz not found" >&2; exit 1; }
ct2_tools=${CT2_TOOLS:-../shared/bench/ct2}
ct2=0
python3 -c 'import ctranslate2, sentencepiece, safetensors' 2>/dev/null && [[ -f $ct2_tools/translate_ct2.py ]] && ct2=1

work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
for f in train.en train.de dev.en dev.de; do
  [[ -s $work/$f ]] || xz -dc "$data/$f.xz" >"$work/$f"
done
head -n "$lines" "$work/dev.en" >"$work/input.en"
# The small model's input: those lines 4 times over (its runs would otherwise take under a second).
for _ in 1 2 3 4; do cat "$work/input.en"; done >"$work/input4.en"

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB"
echo "revision: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$dragoman" --version | grep -E '^(CPU|int8)' || true
if ((ct2)); then
  echo "CTranslate2 $(python3 -c 'import ctranslate2; print(ctranslate2.__version__)')"
else
  echo "CTranslate2: not compared (pip install ctranslate2 sentencepiece safetensors numpy; tools in $ct2_tools)"
fi

# CTranslate2's log names its ISA and GEMM backend when it loads a model (printed once, at its first run).
ct2_named=0
name_ct2() {
  ((ct2_named)) && return
  ct2_named=1
  head -n 1 "$input" >"$work/one.en"
  CT2_VERBOSE=1 python3 "$ct2_tools/translate_ct2.py" --model "$1" --input "$work/one.en" --output "$work/one.out" \
    --beam 1 --threads 1 >"$work/ct2-verbose.log" 2>&1 || true
  grep -E 'CPU:|ISA|backend|GEMM' "$work/ct2-verbose.log" | sed 's/^.*\] /CTranslate2: /' | sort -u || true
}

# untrained_model NAME VOCAB_SIZE CONFIG [--set ...]: NAME.safetensors after one update on 2,000 pairs.
untrained_model() {
  local name=$1 vocab_size=$2 config=$3
  shift 3
  [[ -s $work/$name.safetensors ]] && return
  [[ -s $work/vocab-$vocab_size.model ]] ||
    "$dragoman" build-vocab --input "$work/train.en" "$work/train.de" --vocab-size "$vocab_size" \
      --input-sentence-size 200000 --output "$work/vocab-$vocab_size" 2>"$work/vocab.log" ||
    { cat "$work/vocab.log" >&2; exit 1; }
  head -n 2000 "$work/train.en" >"$work/small.en"
  head -n 2000 "$work/train.de" >"$work/small.de"
  "$dragoman" train --config "$config" --run "$work/$name-run" \
    --set "data.train_source=$work/small.en" --set "data.train_target=$work/small.de" \
    --set "data.valid_source=" --set "data.valid_target=" \
    --set "data.vocabulary=$work/vocab-$vocab_size.model" --set training.max_steps=1 \
    --set training.max_minutes=0 --set checkpoint.every_minutes=0 "$@" 2>"$work/train.log" ||
    { tail -n 20 "$work/train.log" >&2; exit 1; }
  cp "$work/$name-run/checkpoints/checkpoint-last.safetensors" "$work/$name.safetensors"
}

# seconds LOG: the search's seconds from Dragoman's summary line or translate_ct2.py's.
seconds() {
  sed -n 's/.*\(translate\|ct2\): [0-9]* lines, .* in \([0-9.]*\) s:.*/\2/p' "$1" | tail -n 1
}

# run_dragoman MODEL BEAM THREADS OUT [options] and run_ct2 DIR BEAM THREADS OUT [options]: seconds.
run_dragoman() {
  local model=$1 beam=$2 threads=$3 out=$4
  shift 4
  "$dragoman" translate --model "$model" --input "$input" --output "$out" --beam "$beam" --threads "$threads" \
    --length-normalization power "$@" 2>"$work/run.log" || { tail -n 20 "$work/run.log" >&2; exit 1; }
  seconds "$work/run.log"
}
run_ct2() {
  local dir=$1 beam=$2 threads=$3 out=$4 vmap=$5 compute=float32
  shift 5
  [[ $dir == *-int8 ]] && compute=int8
  local runner=(python3 "$ct2_tools/translate_ct2.py")
  ((vmap)) && runner=(python3 bench/ct2_vmap.py "$ct2_tools/translate_ct2.py")
  "${runner[@]}" --model "$dir" --input "$input" --output "$out" --beam "$beam" --alpha 0.6 \
    --threads "$threads" --compute-type "$compute" "$@" >"$work/run.log" 2>&1 || { tail -n 20 "$work/run.log" >&2; exit 1; }
  seconds "$work/run.log"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a + 0 == 0) print "-"; else printf "%.2f", b / a }'; }
bleu() { "$dragoman" score-bleu -i "$1" -r "$reference" 2>/dev/null | sed -n 's/^BLEU[^=]*= \([0-9.]*\) .*/\1/p'; }

# table ID NAME MODEL SHORTLIST [translate options]: the table of one model (ID names its files).
table() {
  local id=$1 name=$2 model=$3 shortlist=$4
  shift 4
  local caps=("$@") stem=$work/$id
  if ((ct2)); then
    for q in float32 int8; do
      local dir=$stem-ct2-$q convert=(python3 "$ct2_tools/dragoman_to_ct2.py" "$model" "$stem-ct2-$q")
      [[ $q == int8 ]] && convert+=(--quantization int8)
      [[ -d $dir ]] || "${convert[@]}" >"$work/convert.log" 2>&1 || { tail -n 20 "$work/convert.log" >&2; exit 1; }
      grep -v $'^#[^\t]*$' "$shortlist" >"$dir/vmap.txt"  # CTranslate2's vocabulary map: the same lists
    done
    name_ct2 "$stem-ct2-float32"
  fi
  echo
  echo "$name ($(wc -l <"$input") lines of $(basename "$input"); shortlist: $(grep -c $'\t' "$shortlist") lists)"
  echo
  echo "| beam | threads | Dragoman fp32 s | CT2 fp32 s | CT2 / Dragoman | Dragoman int8 s | CT2 int8 s | CT2 / Dragoman | Dragoman fp32 + shortlist s | CT2 fp32 + vmap s | CT2 / Dragoman | Dragoman int8 + shortlist s | CT2 int8 + vmap s | CT2 / Dragoman |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  local beam threads
  for beam in 4 1; do
    for threads in 1 2; do
      local row="| $beam | $threads" sl q d c
      for sl in 0 1; do
        for q in fp32 int8; do
          local opts=("${caps[@]}") ct2_opts=("${caps[@]}") out=$stem-b$beam-t$threads-$q-sl$sl
          ((sl)) && opts+=(--shortlist "$shortlist")
          [[ $q == int8 ]] && opts+=(--precision int8)
          d=$(run_dragoman "$model" "$beam" "$threads" "$out.dragoman" "${opts[@]}")
          c=""
          if ((ct2)); then
            local dir=$stem-ct2-float32
            [[ $q == int8 ]] && dir=$stem-ct2-int8
            c=$(run_ct2 "$dir" "$beam" "$threads" "$out.ct2" "$sl" "${ct2_opts[@]}")
          fi
          row+=" | $d | ${c:--} | $(ratio "$d" "$c")"
        done
      done
      echo "$row |"
    done
  done
  if [[ -n $reference ]]; then
    echo
    echo "BLEU of $name against $(basename "$reference") (beam 4, 2 threads):"
    echo
    echo "| variant | Dragoman | CTranslate2 |"
    echo "|---|---:|---:|"
    local q sl
    for sl in 0 1; do
      for q in fp32 int8; do
        local out=$stem-b4-t2-$q-sl$sl
        echo "| $q$( ((sl)) && echo " + shortlist/vmap") | $(bleu "$out.dragoman") | $( ((ct2)) && bleu "$out.ct2" || echo -) |"
      done
    done
  fi
}

# The untrained models' shortlists: IBM model 1 on the corpus's training pairs, in their vocabulary.
shortlist_for() {
  local model=$1 out=$2
  [[ -s $out ]] && return
  "$dragoman" build-shortlist --model "$model" --source "$work/train.en" --target "$work/train.de" \
    --max-pairs "${SHORTLIST_PAIRS:-200000}" ${SHORTLIST_ARGS:-} -o "$out" 2>"$work/shortlist.log" ||
    { tail -n 20 "$work/shortlist.log" >&2; exit 1; }
}

reference=""
for name in ${MODELS:-base small}; do
  case $name in
    base) untrained_model base 37000 configs/transformer-base.yaml --set training.tokens_per_update=3125 ;;
    small) untrained_model small 8000 configs/demo.yaml --set training.lr_decay=constant --set training.lr_hold=0 ;;
    *) echo "bench-translate: MODELS: $name: expected base or small" >&2; exit 2 ;;
  esac
  shortlist_for "$work/$name.safetensors" "$work/$name.shortlist"
  input=$work/input.en
  [[ $name == small ]] && input=$work/input4.en
  table "$name" "$name (1 update), cap 30 tokens" "$work/$name.safetensors" "$work/$name.shortlist" \
    --max-length-a 0 --max-length-b 30
done
if [[ -n ${MODEL:-} ]]; then
  input=${INPUT:-$work/input.en}
  reference=${REFERENCE:-}
  shortlist=${SHORTLIST:-$work/model.shortlist}
  [[ -n ${SHORTLIST:-} ]] || shortlist_for "$MODEL" "$shortlist"
  table model "$(basename "$MODEL"), cap source + 50" "$MODEL" "$shortlist"
fi
