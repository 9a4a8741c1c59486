#!/usr/bin/env bash
# Chooses translate's beam size and length penalty on a development set, the way the paper chose its
# beam 4 and alpha = 0.6 ("chosen after experimentation on the development set"): translates the dev
# source once for each pair of the grid, scores every output against the dev reference with
# score-bleu, prints a table (beam, alpha, BLEU, length ratio) on standard error and the best pair on
# standard output as translate's options, so that
#   read -r -a best <<<"$(scripts/tune-decoding.sh --model M --source dev.en --reference dev.de)"
#   dragoman translate --model M "${best[@]}" ...      # --beam 4 --length-penalty 1.5
# Ties go to the pair met first (beams in the outer loop: list the defaults first). docs/DECODING.md,
# "Choosing the beam and the length penalty". With --save-to FILE (repeatable) the chosen beam,
# alpha and normalisation are also written into each model file FILE (dragoman decoding-defaults
# --in-place), so that translate and serve use them with no options.
# Usage: scripts/tune-decoding.sh --model MODEL --source FILE --reference FILE
#          [--beams "4"] [--alphas "0.6 1.0 1.5 2.0"] [--length-normalization gnmt|power]
#          [--save-to MODEL_FILE]... [--dragoman build/src/dragoman] [--keep DIR]
#          [-- more translate options (--threads, --device)]
#   --keep DIR: keep the translations, as DIR/beam-B.alpha-A.txt (otherwise a temporary directory's)
set -euo pipefail

usage() {
  sed -n '/^# Usage:/,/^#   --keep/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
fail() {
  echo "tune-decoding: $*" >&2
  exit 2
}

model='' source='' reference='' beams='4' alphas='0.6 1.0 1.5 2.0' normalization=gnmt keep=''
dragoman=${DRAGOMAN:-}
extra=()
save_to=()
while (($# > 0)); do
  case $1 in
    --model | --source | --reference | --beams | --alphas | --length-normalization | --dragoman | --keep | --save-to)
      (($# >= 2)) || fail "$1 needs a value"
      case $1 in
        --model) model=$2 ;;
        --source) source=$2 ;;
        --reference) reference=$2 ;;
        --beams) beams=$2 ;;
        --alphas) alphas=$2 ;;
        --length-normalization) normalization=$2 ;;
        --dragoman) dragoman=$2 ;;
        --keep) keep=$2 ;;
        --save-to) save_to+=("$2") ;;
      esac
      shift 2
      ;;
    --)
      shift
      extra=("$@")
      break
      ;;
    -h | --help) usage ;;
    *) fail "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n $model && -n $source && -n $reference ]] || fail "--model, --source and --reference are required (see --help)"
for file in "$model" "$source" "$reference" "${save_to[@]}"; do
  [[ -f $file && -r $file ]] || fail "$file: no such readable file"
done
source_lines=$(wc -l <"$source")
reference_lines=$(wc -l <"$reference")
((source_lines == reference_lines)) ||
  fail "$source has $source_lines lines, $reference has $reference_lines (expected one reference line per source line)"
if [[ -z $dragoman ]]; then
  dragoman=$(dirname "$0")/../build/src/dragoman
  [[ -x $dragoman ]] || dragoman=$(command -v dragoman || true)
fi
[[ -n $dragoman && -x $dragoman ]] || fail "no dragoman binary (give --dragoman PATH or set DRAGOMAN)"
read -r -a beam_grid <<<"$beams"
read -r -a alpha_grid <<<"$alphas"
((${#beam_grid[@]} > 0)) || fail "--beams is empty"
((${#alpha_grid[@]} > 0)) || fail "--alphas is empty"
for beam in "${beam_grid[@]}"; do
  [[ $beam =~ ^[1-9][0-9]*$ ]] || fail "--beams: '$beam' is not a positive whole number (expected e.g. \"4 6\")"
done
for alpha in "${alpha_grid[@]}"; do
  [[ $alpha =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "--alphas: '$alpha' is not a number (expected e.g. \"0.6 1.0 1.5\")"
done

if [[ -n $keep ]]; then
  mkdir -p "$keep"
  dir=$keep
else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi

printf '%-5s %-7s %8s %7s\n' beam alpha BLEU ratio >&2
best='' best_bleu=''
for beam in "${beam_grid[@]}"; do
  for alpha in "${alpha_grid[@]}"; do
    out=$dir/beam-$beam.alpha-$alpha.txt
    options=(--beam "$beam" --length-penalty "$alpha")
    if ! log=$("$dragoman" translate --model "$model" --input "$source" --output "$out" "${options[@]}" \
      --length-normalization "$normalization" "${extra[@]}" 2>&1); then
      echo "$log" >&2
      fail "translate failed with ${options[*]}"
    fi
    # '... = 12.34 47.6/19.5/10.2/5.4 (BP = 0.822 ratio = 0.836 hyp_len = 4776 ref_len = 5711)'
    line=$("$dragoman" score-bleu --ref "$reference" --input "$out" --width 4)
    bleu=$(sed -n 's/^BLEU[^=]*= \([0-9.]*\) .*/\1/p' <<<"$line")
    ratio=$(sed -n 's/.*ratio = \([0-9.]*\).*/\1/p' <<<"$line")
    [[ -n $bleu && -n $ratio ]] || fail "could not read score-bleu's line: $line"
    printf '%-5s %-7s %8s %7s\n' "$beam" "$alpha" "$bleu" "$ratio" >&2
    if [[ -z $best ]] || awk -v a="$bleu" -v b="$best_bleu" 'BEGIN { exit !(a > b) }'; then
      best="${options[*]}"
      best_bleu=$bleu
    fi
  done
done
echo "chosen: $best (dev BLEU $best_bleu)" >&2
read -r -a chosen <<<"$best"
for file in "${save_to[@]}"; do
  "$dragoman" decoding-defaults "$file" "${chosen[@]}" --length-normalization "$normalization" --in-place >&2 ||
    fail "could not write the chosen settings into $file"
done
echo "$best"
