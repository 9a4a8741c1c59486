#!/usr/bin/env bash
# What each way of decoding costs, on a test set (docs/PERFORMANCE.md, "Decoding options"): the
# paper's beam search, greedy decoding, Edunov et al.'s sampling variants, beam + noise, n-best
# samples, and the beam search guided by target prefixes and by lexical constraints taken from the
# references (Post & Vilar 2018's evaluation: random reference words as constraints). Prints a
# table: seconds, lines/s, BLEU and chrF against the references; then the share of the constraints
# found in the constrained outputs (every one, by construction) beside their share in the
# unconstrained beam search's output.
#   scripts/bench-decoding.sh MODEL [SOURCE REFERENCE]   (default data/demo/test.en, test.de)
#   DRAGOMAN=build/src/dragoman  THREADS (default: all cores)  WORK (default /tmp/dragoman-bench-decoding)
# Constraints: each reference's words of 5 or more letters (nothing but letters once the ASCII
# punctuation around them is cut), one or two of them
# chosen at random (seed 1) for each line; lines without such a word have none.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: scripts/bench-decoding.sh MODEL [SOURCE REFERENCE]}
source=${2:-data/demo/test.en}
reference=${3:-data/demo/test.de}
dragoman=${DRAGOMAN:-build/src/dragoman}
threads=${THREADS:-$(nproc)}
work=${WORK:-/tmp/dragoman-bench-decoding}
[[ -x $dragoman ]] || { echo "bench-decoding: $dragoman not found: build first" >&2; exit 1; }
mkdir -p "$work"

# Words of letters only (German's included): quotation marks such as „ are not in every vocabulary.
letters='^([A-Za-z]|ä|ö|ü|Ä|Ö|Ü|ß)+$'
# The guides: one and two reference words as constraints; the reference's first two words as a prefix.
pick() {
  awk -v n="$1" -v word="$letters" 'BEGIN { srand(1) } {
    k = 0
    for (i = 1; i <= NF; i++) { w = $i; gsub(/^[[:punct:]]+|[[:punct:]]+$/, "", w); if (length(w) >= 5 && w ~ word && !(w in seen)) { seen[w] = 1; c[++k] = w } }
    delete seen
    line = ""
    for (j = 0; j < n && k > 0; j++) { r = int(rand() * k) + 1; line = line (j ? "\t" : "") c[r]; c[r] = c[k]; k-- }
    print line
  }' "$reference"
}
pick 1 >"$work/one.tsv"
pick 2 >"$work/two.tsv"
awk -v word="$letters" '{ print (NF >= 3 && $1 ~ word && $2 ~ word ? $1 " " $2 : "") }' "$reference" >"$work/prefix.txt"

# share FILE CONSTRAINTS: the percentage of the constraints that FILE's lines contain.
share() {
  paste -d '\n' "$2" "$1" | awk -F'\t' 'NR % 2 == 1 { n = split($0, c, "\t"); next }
    { for (i = 1; i <= n; i++) { total++; if (c[i] != "" && index($0, c[i]) > 0) found++ } }
    END { printf "%.1f", total ? 100 * found / total : 0 }'
}

lines=$(wc -l <"$source")
echo "bench-decoding: $model on $source ($lines lines), $threads thread(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '| %-34s | %8s | %8s | %6s | %6s |\n' decoding seconds lines/s BLEU chrF
printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..36})" ----------: ----------: --------: --------:
row() {
  local name=$1 out=$work/$2.txt
  shift 2
  local start end
  start=$(date +%s.%N)
  "$dragoman" translate -m "$model" -i "$source" -o "$out" --threads "$threads" --no-progress "$@" 2>/dev/null
  end=$(date +%s.%N)
  if [[ " $* " == *" --nbest "* ]]; then  # n-best lines: the first of each line is scored
    sed -n 's/^\([0-9]*\) ||| \(.*\) ||| F0=.*/\1\t\2/p' "$out" | awk -F'\t' 'NR == 1 || $1 != last { print $2; last = $1 }' >"$out.1best"
    out=$out.1best
  fi
  local bleu chrf
  bleu=$("$dragoman" score-bleu --ref "$reference" --input "$out" --score-only --width 2)
  chrf=$("$dragoman" score-bleu --ref "$reference" --input "$out" -m chrf --score-only --width 2)
  printf '| %-34s | %8.2f | %8.0f | %6s | %6s |\n' "$name" "$(echo "$end - $start" | bc)" \
    "$(echo "$lines / ($end - $start)" | bc -l)" "$bleu" "$chrf"
}
row "beam 4 (the paper)" beam --beam 4
row "greedy (beam 1)" greedy --beam 1
row "sampling (unrestricted)" sampling --sampling --seed 1
row "sampling, top-k 10" top10 --sampling --top-k 10 --seed 1
row "sampling, top-p 0.9" topp --sampling --top-p 0.9 --seed 1
row "sampling, 4 samples a line" samples4 --sampling --nbest 4 --seed 1
row "beam 4 + noise" noise --beam 4 --noise --seed 1
row "beam 4, prefix: 2 reference words" prefix --beam 4 --target-prefix "$work/prefix.txt"
unconstrained_one=$(share "$work/beam.txt" "$work/one.tsv")
unconstrained_two=$(share "$work/beam.txt" "$work/two.tsv")
row "beam 4, 1 constraint a line" one --beam 4 --constraints "$work/one.tsv"
row "beam 4, 2 constraints a line" two --beam 4 --constraints "$work/two.tsv"
echo
echo "Constraints found in the output: with 1 a line $(share "$work/one.txt" "$work/one.tsv") % (unconstrained beam 4:"
echo "$unconstrained_one %), with 2 a line $(share "$work/two.txt" "$work/two.tsv") % (unconstrained: $unconstrained_two %);"
echo "$(awk -F'\t' '$0 != "" { n += NF } END { print n }' "$work/one.tsv") and $(awk -F'\t' '$0 != "" { n += NF } END { print n }' "$work/two.tsv") constraints in all."
