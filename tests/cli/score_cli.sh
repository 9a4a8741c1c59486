#!/usr/bin/env bash
# End-to-end checks of `dragoman score` (force decoding) on a small model trained here on a
# reversal task: the scores of translate --deterministic's own outputs are translate's
# log-probabilities and piece scores bit for bit (given as pieces with --pieces, and as text where
# the text encodes to the same pieces), batching changes nothing, an ensemble of the model with
# itself scores as the model, --normalize is the mean per piece, and bad input (line counts that
# differ, an unknown piece, an empty source line, invalid UTF-8) is an error naming the file and
# line, with no output file written.
# Usage: score_cli.sh DRAGOMAN_BINARY
set -uo pipefail
dragoman=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

write_reversal_corpus "$tmp/train" 300 7
write_learning_config "$tmp/a.yaml" "$tmp/train" 1 25
expect train 0 "train: done at step 500" -- "$dragoman" train -c "$tmp/a.yaml" --run "$tmp/a"
model=$tmp/a/checkpoints/checkpoint-last.safetensors
head -n 60 "$tmp/train.src" >"$tmp/src.txt"
echo "j i h g f e d c b a a b c d" >>"$tmp/src.txt"

# translate's own outputs, with their pieces and scores.
expect translate 0 "61 lines" -- "$dragoman" translate -m "$model" -i "$tmp/src.txt" -o "$tmp/out.jsonl" \
  --output-format json --word-scores --deterministic
python3 - "$tmp/out.jsonl" "$tmp/hyp.txt" "$tmp/pieces.txt" <<'PY'
import json, sys
objects = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
with open(sys.argv[2], "w", encoding="utf-8") as text, open(sys.argv[3], "w", encoding="utf-8") as pieces:
    for o in objects:
        text.write(o["translation"] + "\n")
        assert o["pieces"][-1] == "</s>"
        pieces.write(" ".join(o["pieces"][:-1]) + "\n")
PY

expect score-pieces 0 "score: 61 sentence pairs" -- "$dragoman" score -m "$model" -s "$tmp/src.txt" \
  -t "$tmp/pieces.txt" --pieces --token-scores --deterministic -o "$tmp/scores.txt"
check score-equals-translate python3 - "$tmp/out.jsonl" "$tmp/scores.txt" <<'PY'
import json, sys
objects = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[2], encoding="utf-8")]
assert len(rows) == len(objects) == 61, (len(rows), len(objects))
for o, (score, tokens) in zip(objects, rows):
    assert float(score) == o["log_prob"], (score, o["log_prob"])
    assert [float(t) for t in tokens.split()] == o["piece_scores"], (tokens, o["piece_scores"])
PY

# As text: the lines whose text encodes to translate's pieces (here every line: letters and
# spaces) score the same.
expect score-text 0 "61 sentence pairs" -- "$dragoman" score -m "$model" -s "$tmp/src.txt" -t "$tmp/hyp.txt" \
  --deterministic -o "$tmp/text-scores.txt"
check text-equals-pieces cmp -s <(cut -f1 "$tmp/scores.txt") "$tmp/text-scores.txt"
# Progress on a terminal (script(1)): a status line, the bar full at the end; none with --no-progress.
expect progress-terminal 0 "score \[#{20}\] 61/61 pairs \| [0-9.]+ pairs/s" -- \
  script -qec "'$dragoman' score -m '$model' -s '$tmp/src.txt' -t '$tmp/hyp.txt' --deterministic -o '$tmp/tty-scores.txt'" \
  /dev/null
check progress-same-scores cmp -s "$tmp/text-scores.txt" "$tmp/tty-scores.txt"
script -qec "'$dragoman' score -m '$model' -s '$tmp/src.txt' -t '$tmp/hyp.txt' -o '$tmp/tty-scores.txt' --no-progress" \
  /dev/null >"$tmp/progress.out" 2>&1
check no-progress-flag grep -q "61 sentence pairs" "$tmp/progress.out"
check no-progress-no-line test -z "$(grep -a 'score \[' "$tmp/progress.out")"
# One sentence a batch, and an ensemble of the model with itself ((x + x) / 2 == x): the same scores.
"$dragoman" score -m "$model" -s "$tmp/src.txt" -t "$tmp/hyp.txt" --deterministic --batch-sentences 1 \
  -o "$tmp/one.txt" 2>/dev/null
check batching-changes-nothing cmp -s "$tmp/one.txt" "$tmp/text-scores.txt"
"$dragoman" score -m "$model" -m "$model" -s "$tmp/src.txt" -t "$tmp/hyp.txt" --deterministic \
  -o "$tmp/ensemble.txt" 2>/dev/null
check ensemble-of-itself cmp -s "$tmp/ensemble.txt" "$tmp/text-scores.txt"
# --normalize: the score over the pieces and EOS; a wrong translation scores lower.
"$dragoman" score -m "$model" -s "$tmp/src.txt" -t "$tmp/pieces.txt" --pieces --normalize --token-scores \
  --deterministic -o "$tmp/normalized.txt" 2>/dev/null
check normalize python3 - "$tmp/scores.txt" "$tmp/normalized.txt" <<'PY'
import sys
for a, b in zip(open(sys.argv[1]), open(sys.argv[2])):
    (score, tokens), (mean, _) = a.split("\t"), b.split("\t")
    assert abs(float(mean) - float(score) / len(tokens.split())) < 1e-12, (score, mean)
PY
head -n 5 "$tmp/src.txt" >"$tmp/five.txt"
head -n 5 "$tmp/src.txt" | rev >"$tmp/five-right.txt"
head -n 5 "$tmp/src.txt" >"$tmp/five-wrong.txt"  # not reversed
check wrong-scores-lower python3 - "$("$dragoman" score -m "$model" -s "$tmp/five.txt" -t "$tmp/five-right.txt" \
  2>/dev/null | paste -sd,)" "$("$dragoman" score -m "$model" -s "$tmp/five.txt" -t "$tmp/five-wrong.txt" \
  2>/dev/null | paste -sd,)" <<'PY'
import sys
right, wrong = ([float(x) for x in a.split(",")] for a in sys.argv[1:3])
assert len(right) == len(wrong) == 5 and all(r > w for r, w in zip(right, wrong)), (right, wrong)
PY

# Bad input: a named error, exit 1, no output file.
head -n 3 "$tmp/hyp.txt" >"$tmp/short.txt"
expect line-counts 1 "src.txt has 61 lines but .*short.txt has 3" -- "$dragoman" score -m "$model" \
  -s "$tmp/src.txt" -t "$tmp/short.txt" -o "$tmp/bad.txt"
printf 'a b c\nd e\n' >"$tmp/two.txt"
printf 'c b a\nzz\n' >"$tmp/two-pieces.txt"
expect unknown-piece 1 "two-pieces.txt:2: 'zz' is not a piece" -- "$dragoman" score -m "$model" -s "$tmp/two.txt" \
  -t "$tmp/two-pieces.txt" --pieces -o "$tmp/bad.txt"
printf 'a b c\n\n' >"$tmp/empty-source.txt"
expect empty-source 1 "empty-source.txt:2: an empty source line" -- "$dragoman" score -m "$model" \
  -s "$tmp/empty-source.txt" -t "$tmp/two.txt" -o "$tmp/bad.txt"
printf 'a b c\nd \xff e\n' >"$tmp/invalid.txt"
expect invalid-utf8 1 "invalid.txt:2: invalid UTF-8" -- "$dragoman" score -m "$model" -s "$tmp/two.txt" \
  -t "$tmp/invalid.txt" -o "$tmp/bad.txt"
check no-output-on-error test ! -e "$tmp/bad.txt"
expect missing-target 2 "target is required" -- "$dragoman" score -m "$model" -s "$tmp/two.txt"

echo "score_cli: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
