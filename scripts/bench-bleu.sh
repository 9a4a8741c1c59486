#!/usr/bin/env bash
# Benchmark: `dragoman score-bleu` against `python3 -m sacrebleu` on the same synthetic corpus
# (default 1,000,000 lines of German-like text, deterministic), BLEU (13a and intl) and chrF.
# Prints a Markdown table of wall time, peak memory and the speed-up, and checks that both
# print the same score. (On a 24 GiB machine sacreBLEU's chrF runs out of memory on 1M lines:
# the table says so; use a smaller LINES, e.g. 200000, to compare chrF.) Needs a built binary (scripts/test.sh) and `pip install sacrebleu`.
#   scripts/bench-bleu.sh [LINES] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-1000000}
build_dir=${2:-build}
dragoman=$build_dir/src/dragoman
[[ -x $dragoman ]] || { echo "bench-bleu: $dragoman not found: build first (scripts/test.sh)" >&2; exit 1; }
python3 -c "import sacrebleu" 2>/dev/null || { echo "bench-bleu: pip install sacrebleu==2.5.1" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench-bleu: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 scripts/make-synthetic-corpus.py --lines "$lines" --seed 1 --out "$work/corpus"

# run LABEL COMMAND...: prints "seconds peak_MiB status" (status "ok" or "failed:CODE") and keeps
# the command's stdout in $work/LABEL.out. A baseline that runs out of memory is reported, not hidden.
run() {
  local label=$1
  shift
  local status=ok
  /usr/bin/time -f "%e %M" -o "$work/$label.time" "$@" >"$work/$label.out" 2>/dev/null || status="failed:$?"
  tail -n 1 "$work/$label.time" | awk -v s="$status" '{ printf "%s %.0f %s", $1, $2 / 1024, s }'
}

# cell SECONDS MIB STATUS
cell() {
  if [[ $3 == ok ]]; then echo "$1 s, $2 MiB"; else echo "${3/failed:/failed (exit }) after $1 s at $2 MiB"; fi
}

echo "| metric | dragoman 1 thread | dragoman 2 threads | sacreBLEU $(python3 -c 'import sacrebleu; print(sacrebleu.__version__)') | speed-up (2 threads) | same score |"
echo "|---|---|---|---|---|---|"
for metric in "bleu 13a" "bleu intl" "chrf -"; do
  read -r name tok <<<"$metric"
  ours_args=(-m "$name" --score-only -w 6)
  theirs_args=(-m "$name" -b -w 6)
  if [[ $name == bleu ]]; then
    ours_args+=(--tokenize "$tok")
    theirs_args+=(--tokenize "$tok")
  fi
  read -r t1 m1 s1 <<<"$(run ours1 "$dragoman" score-bleu -r "$work/corpus.ref" -i "$work/corpus.hyp" --threads 1 "${ours_args[@]}")"
  read -r t2 m2 s2 <<<"$(run ours2 "$dragoman" score-bleu -r "$work/corpus.ref" -i "$work/corpus.hyp" --threads 2 "${ours_args[@]}")"
  read -r tp mp sp <<<"$(run theirs python3 -m sacrebleu "$work/corpus.ref" -i "$work/corpus.hyp" "${theirs_args[@]}")"
  same=no
  speedup="-"
  if [[ $sp == ok ]]; then
    speedup=$(awk -v a="$tp" -v b="$t2" 'BEGIN { printf "%.1fx", a / b }')
    if [[ "$(cat "$work/ours2.out")" == "$(cat "$work/theirs.out")" ]]; then same="yes ($(cat "$work/ours2.out"))"; fi
  else
    same="- (dragoman: $(cat "$work/ours2.out"))"
  fi
  label=$name
  [[ $name == bleu ]] && label="BLEU $tok"
  [[ $name == chrf ]] && label="chrF2"
  echo "| $label | $(cell "$t1" "$m1" "$s1") | $(cell "$t2" "$m2" "$s2") | $(cell "$tp" "$mp" "$sp") | $speedup | $same |"
done
echo
echo "$lines lines, $(wc -c <"$work/corpus.hyp") bytes of hypotheses; machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$dragoman" --version | grep '^CPU row kernels' || true  # score-bleu's own loops; no GEMM here
