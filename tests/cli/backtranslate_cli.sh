#!/usr/bin/env bash
# scripts/backtranslate.sh end to end at a small budget, on a reversal corpus (English and German
# stand-ins: letters, and the same letters reversed): the split, the reverse model, synthetic
# sources by every method (tagged, aligned with the monolingual lines), the forward models at one
# budget, and the table of test BLEU and chrF, in which the models have learned the task; bad
# settings are refused.
# Usage: backtranslate_cli.sh DRAGOMAN_BINARY SOURCE_DIR
set -uo pipefail
dragoman=$1
source_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

mkdir -p "$tmp/data"
write_reversal_corpus "$tmp/train" 800 3
write_reversal_corpus "$tmp/held" 80 11
mv "$tmp/train.src" "$tmp/data/train.en"
mv "$tmp/train.tgt" "$tmp/data/train.de"
head -n 40 "$tmp/held.src" >"$tmp/data/dev.en"
head -n 40 "$tmp/held.tgt" >"$tmp/data/dev.de"
tail -n 40 "$tmp/held.src" >"$tmp/data/test.en"
tail -n 40 "$tmp/held.tgt" >"$tmp/data/test.de"
write_learning_config "$tmp/c.yaml" "$tmp/unused" 1 25
sed -i 's/max_positions: 16/max_positions: 32/; s/max_length: 10/max_length: 24/' "$tmp/c.yaml"

bt() { env DRAGOMAN="$dragoman" DATA="$tmp/data" CONFIG="$tmp/c.yaml" THREADS=1 "$@"; }
bt STEPS=500 METHODS="sampling top10 beam noise" bash "$source_dir/scripts/backtranslate.sh" "$tmp/run" \
  >"$tmp/run.out" 2>&1
rc=$?
check run test "$rc" -eq 0
[[ $rc -eq 0 ]] || tail -n 30 "$tmp/run.out"
check split test "$(wc -l <"$tmp/run/data/parallel.en")" -eq 400 -a "$(wc -l <"$tmp/run/data/mono.de")" -eq 400
for method in sampling top10 beam noise; do
  check "synthetic-$method" test "$(wc -l <"$tmp/run/data/synthetic.$method.en")" -eq 400
  check "tagged-$method" test "$(grep -c '^<BT> ' "$tmp/run/data/train.$method.en")" -ge 390
  check "aligned-$method" test "$(wc -l <"$tmp/run/data/train.$method.en")" -eq "$(wc -l <"$tmp/run/data/train.$method.de")"
done
check noise-blanks grep -q '<BLANK>' "$tmp/run/data/synthetic.noise.en"
check sampled-differs-from-beam bash -c "! cmp -s '$tmp/run/data/synthetic.sampling.en' '$tmp/run/data/synthetic.beam.en'"
# The table: five forward models, each trained for 500 updates, each having learned to reverse.
check table python3 - "$tmp/run.out" <<'PY'
import re, sys
rows = [l for l in open(sys.argv[1]) if re.match(r"\s+parallel", l)]
assert len(rows) == 5, rows
for row in rows:
    pairs, updates, bleu, chrf = row.split()[-4:]
    assert updates == "500", row
    assert float(bleu) > 30, row
PY
# Run again: the finished runs are kept (no update more), the table the same models'.
expect rerun-keeps-runs 0 "parallel \+ back-translated \(beam\) +[0-9]+ +500 " -- \
  bt STEPS=500 METHODS="beam" bash "$source_dir/scripts/backtranslate.sh" "$tmp/run"
check rerun-no-training bash -c "! grep -q 'step 100 ' <(sed -n '/already finished/,\$p' '$tmp/run/bt-beam.log')"
expect bad-method 1 "unknown method 'greedy'" -- bt METHODS=greedy bash "$source_dir/scripts/backtranslate.sh" "$tmp/x"
expect bad-share 1 "MONO_PERCENT must be a whole number from 1 to 99" -- \
  bt MONO_PERCENT=100 bash "$source_dir/scripts/backtranslate.sh" "$tmp/x"
expect no-data 1 "nowhere/train.en is missing" -- env DRAGOMAN="$dragoman" DATA="$tmp/nowhere" \
  bash "$source_dir/scripts/backtranslate.sh" "$tmp/x"

echo "backtranslate_cli: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
