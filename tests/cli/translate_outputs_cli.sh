#!/usr/bin/env bash
# End-to-end checks of translate's outputs beyond the text (docs/DECODING.md), on small models
# trained here on a reversal task: JSON lines (--output-format json) with word scores that add up
# to the log-probability, hard and soft alignments within the words (and near the anti-diagonal, as
# a reversal's attention should be), the same fields in text, ensembles (a model with itself
# translates as the model alone; models of another vocabulary are refused by name), attention
# pictures (well-formed SVG, one cell per word pair, rendered by rsvg-convert),
# scripts/alignment-check.sh, and usage errors.
# Usage: translate_outputs_cli.sh DRAGOMAN_BINARY
set -uo pipefail
dragoman=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

write_reversal_corpus "$tmp/train" 300 7
# train_model NAME SEED VOCAB: a model of the reversal task, trained for a few seconds.
train_model() {
  write_learning_config "$tmp/$1.yaml" "$tmp/train" "$2" "$3"
  expect "train-$1" 0 "train: done at step 500" -- "$dragoman" train -c "$tmp/$1.yaml" --run "$tmp/$1"
}
train_model a 1 25
train_model b 2 25
train_model other 1 20
a=$tmp/a/checkpoints/checkpoint-last.safetensors
b=$tmp/b/checkpoints/checkpoint-last.safetensors
other=$tmp/other/checkpoints/checkpoint-last.safetensors
{
  echo "a b c"
  echo ""
  echo "d e f g h"
  echo "j i h g f e d c b a a b c d e f g h i j"
  echo "c  c   c c"
  echo "f"
} >"$tmp/in.txt"
head -n 40 "$tmp/train.src" >"$tmp/dev.txt"

# JSON lines: one object per input line; the best hypothesis's translation equals the text
# output; word and piece scores add up to the log-probability (the pieces' and EOS's in order: the
# same bits); alignment pairs within the source and target words, one per target word.
expect json 0 "6 lines" -- "$dragoman" translate -m "$a" -i "$tmp/in.txt" -o "$tmp/out.jsonl" \
  --output-format json --word-scores --alignment --nbest 3
"$dragoman" translate -m "$a" -i "$tmp/in.txt" -o "$tmp/out.txt" 2>/dev/null
check json-consistent python3 - "$tmp/out.jsonl" "$tmp/out.txt" "$tmp/in.txt" <<'PY'
import json, math, sys
objects = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
texts = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
inputs = open(sys.argv[3], encoding="utf-8").read().split("\n")[:-1]
assert len(objects) == len(texts) == len(inputs) == 6, (len(objects), len(texts))
for o, text, source in zip(objects, texts, inputs):
    assert o["translation"] == text, (o["translation"], text)
    assert o["source_words"] == source.split(), o["source_words"]
    assert o["truncated"] is True if len(source.split()) > 16 else "truncated" not in o
    hypotheses = o["nbest"]
    assert hypotheses[0]["translation"] == o["translation"]
    assert 1 <= len(hypotheses) <= 3 and (len(hypotheses) == 3 or not source.strip())
    for h in hypotheses:
        assert h["words"] == h["translation"].split()
        # One score per word, then EOS's; the pieces likewise, ending in </s>.
        eos = 1 if source.strip() else 0
        assert len(h["word_scores"]) == len(h["words"]) + eos
        assert len(h["pieces"]) == len(h["piece_scores"]) == len(h["piece_words"])
        assert eos == 0 or (h["pieces"][-1] == "</s>" and h["piece_scores"][-1] == h["eos_score"])
        total = 0.0
        for score in h["piece_scores"]:
            assert score <= 0
            total += score
        assert total == h["log_prob"], (total, h["log_prob"])  # added in the search's order: the same bits
        assert math.isclose(sum(h["word_scores"]), h["log_prob"], rel_tol=1e-12, abs_tol=1e-12)
        pairs = [tuple(p) for p in h["alignment"]]
        assert all(len(p) == 2 and all(type(i) is int for i in p) for p in pairs), pairs
        assert [t for _, t in pairs] == list(range(len(h["words"]))), pairs
        assert all(0 <= s < len(o["source_words"]) for s, _ in pairs), pairs
    assert [h["score"] for h in hypotheses] == sorted([h["score"] for h in hypotheses], reverse=True)
PY

# The reversal model attends mostly to the mirrored source word: on training lines it translates
# right, most hard alignment pairs are (n-1-t)-t.
"$dragoman" translate -m "$a" -i "$tmp/dev.txt" --output-format json --alignment 2>/dev/null >"$tmp/dev.jsonl"
check alignment-anti-diagonal python3 - "$tmp/dev.jsonl" "$tmp/dev.txt" <<'PY'
import json, sys
right = mirrored = pairs = 0
for line, source in zip(open(sys.argv[1], encoding="utf-8"), open(sys.argv[2], encoding="utf-8")):
    o = json.loads(line)
    words = source.split()
    if o["translation"].split() != words[::-1]:
        continue
    right += 1
    n = len(words)
    for s, t in o["alignment"]:
        pairs += 1
        mirrored += s == n - 1 - t
print(f"{right} of 40 lines translated right; {mirrored} of {pairs} alignment pairs mirrored")
assert right >= 20 and mirrored >= 0.7 * pairs
PY

# scripts/alignment-check.sh against hand alignments: for the reversal, the mirrored word. The last
# layer's average (the default) is the one measured above.
paste "$tmp/dev.txt" <(cut -f1 "$tmp/dev.txt" | awk '{ s = ""; for (i = NF; i >= 1; i--) s = s (s ? " " : "") $i; print s }') \
  <(awk '{ s = ""; for (t = 1; t <= NF; t++) s = s (s ? " " : "") (NF - t) "-" (t - 1); print s }' "$tmp/dev.txt") \
  >"$tmp/hand.tsv"
bash "$(dirname "$0")/../../scripts/alignment-check.sh" "$a" "$tmp/hand.tsv" "$dragoman" >"$tmp/check.txt" 2>&1
check alignment-check-table grep -qE '^\| 2 \| average \| 40 of 40 \| [0-9]+ \| 0\.(9[0-9]*|8[5-9][0-9]*) \|' "$tmp/check.txt"
check alignment-check-rows test "$(grep -c '^| [12] |' "$tmp/check.txt")" -eq 6

# Soft alignment: a row per target word over the source words, each summing to 1.
"$dragoman" translate -m "$a" -i "$tmp/in.txt" --output-format json --alignment soft 2>/dev/null >"$tmp/soft.jsonl"
check soft-alignment python3 - "$tmp/soft.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    o = json.loads(line)
    matrix = o["alignment"]
    assert len(matrix) == len(o["words"]), (len(matrix), o["words"])
    for row in matrix:
        assert len(row) == len(o["source_words"])
        assert abs(sum(row) - 1) < 1e-4 and min(row) >= 0, row
PY

# The same in text: " ||| ALIGNMENT ||| WordScores= ..." after the translation.
"$dragoman" translate -m "$a" -i "$tmp/in.txt" --word-scores --alignment 2>/dev/null >"$tmp/extras.txt"
check text-extras python3 - "$tmp/extras.txt" "$tmp/out.jsonl" <<'PY'
import json, sys
for line, o in zip(open(sys.argv[1], encoding="utf-8"), map(json.loads, open(sys.argv[2], encoding="utf-8"))):
    text, alignment, scores = line.rstrip("\n").split(" ||| ")
    pharaoh = " ".join(f"{s}-{t}" for s, t in o["nbest"][0]["alignment"])
    assert text == o["translation"] and alignment == pharaoh, (line, o)
    assert scores.startswith("WordScores=")
    values = [float(v) for v in scores.split()[1:]]
    assert len(values) == len(o["word_scores"]) and all(abs(v - w) < 1e-6 for v, w in zip(values, o["word_scores"]))
PY
"$dragoman" translate -m "$a" -i "$tmp/in.txt" --alignment soft --nbest 2 2>/dev/null >"$tmp/nbest-soft.txt"
check nbest-soft-format test "$(grep -cE '^[0-9]+ \|\|\| [a-j ]* \|\|\| F0= [-0-9.]+ \|\|\| [-0-9.]+ \|\|\| ([0-9.,]+( [0-9.,]+)*)?$' \
  "$tmp/nbest-soft.txt")" -eq "$(wc -l <"$tmp/nbest-soft.txt")"

# Ensembles: a model with itself is the model alone, to the last digit of every score; two
# different models give an ensemble's output; models of another vocabulary are refused by name.
"$dragoman" translate -m "$a" -i "$tmp/dev.txt" --output-format json --word-scores --nbest 2 2>/dev/null >"$tmp/alone.jsonl"
expect ensemble-self 0 "ensemble member 2 of 2" -- "$dragoman" translate -m "$a" -m "$a" -i "$tmp/dev.txt" \
  -o "$tmp/self.jsonl" --output-format json --word-scores --nbest 2
check ensemble-self-is-alone cmp -s "$tmp/alone.jsonl" "$tmp/self.jsonl"
"$dragoman" translate -m "$a" -m "$a" -i "$tmp/dev.txt" --precision int8 2>/dev/null >"$tmp/self-int8.txt"
"$dragoman" translate -m "$a" -i "$tmp/dev.txt" --precision int8 2>/dev/null >"$tmp/alone-int8.txt"
check ensemble-self-int8 cmp -s "$tmp/alone-int8.txt" "$tmp/self-int8.txt"
expect ensemble-two 0 "40 lines" -- "$dragoman" translate -m "$a" -m "$b" -i "$tmp/dev.txt" -o "$tmp/ab.txt"
check ensemble-two-lines test "$(wc -l <"$tmp/ab.txt")" -eq 40
expect ensemble-other-vocabulary 1 "a/checkpoints/checkpoint-last.safetensors and .*other/checkpoints/checkpoint-last.safetensors (hold different vocabularies|differ)" -- \
  "$dragoman" translate -m "$a" -m "$other" -i "$tmp/in.txt"

# --deterministic: a line's output, scores included, is the same alone and in any batch (on every
# CPU path: CI runs this at AVX2 too, where oneDNN's f32 kernels change with the row count).
batches=("" "--batch-sentences 1" "--batch-sentences 3 --batch-tokens 20")
for i in 0 1 2; do
  # shellcheck disable=SC2086 # the options are words
  "$dragoman" translate -m "$a" -m "$b" -i "$tmp/train.src" --output-format json --word-scores --alignment \
    --deterministic ${batches[$i]} 2>/dev/null >"$tmp/det-$i.jsonl"
done
check deterministic-alone cmp -s "$tmp/det-0.jsonl" "$tmp/det-1.jsonl"
check deterministic-small-batches cmp -s "$tmp/det-0.jsonl" "$tmp/det-2.jsonl"
expect deterministic-gpu 2 "--deterministic is for the CPU" -- \
  "$dragoman" translate -m "$a" -i "$tmp/in.txt" --deterministic --device cuda:0

# Attention pictures: one SVG per line with something to translate, well-formed, one cell per
# (target word, source word) pair, rendered to PNG by librsvg.
expect pictures 0 "6 lines" -- "$dragoman" translate -m "$a" -i "$tmp/in.txt" -o "$tmp/pictures.txt" \
  --attention-dir "$tmp/svg" --attention-layer 1
check picture-files test "$(find "$tmp/svg" -name '*.svg' | sort | xargs -n1 basename | tr '\n' ' ')" == \
  "000000.svg 000002.svg 000003.svg 000004.svg 000005.svg "
check pictures-well-formed python3 - "$tmp/svg" "$tmp/in.txt" "$tmp/pictures.txt" <<'PY'
import os, sys, xml.etree.ElementTree as ET
inputs = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
outputs = open(sys.argv[3], encoding="utf-8").read().split("\n")[:-1]
for i, (source, target) in enumerate(zip(inputs, outputs)):  # from 0, as the n-best ids
    path = os.path.join(sys.argv[1], f"{i:06d}.svg")
    if not source.strip():
        assert not os.path.exists(path)
        continue
    root = ET.parse(path).getroot()
    cells = [e for e in root.iter("{http://www.w3.org/2000/svg}rect") if e.get("class") == "cell"]
    assert len(cells) == len(source.split()) * len(target.split()), (path, len(cells))
    assert "decoder layer 1 of 2" in ET.tostring(root, encoding="unicode")
    assert f"sentence {i} (input line {i + 1})" in ET.tostring(root, encoding="unicode")
PY
# render_all DIR: every SVG in DIR to PNG with rsvg-convert (librsvg, scripts/install-deps.sh).
render_all() {
  local f
  for f in "$1"/*.svg; do rsvg-convert -o "${f%.svg}.png" "$f" || return 1; done
  test "$(find "$1" -name '*.png' -size +0 | wc -l)" -eq 5
}
check pictures-render render_all "$tmp/svg"

# Vocabulary shortlists: IBM model 1 finds that the reversal task writes each letter as itself;
# with one target piece a source piece (and none kept for every batch) each output holds only its
# batch's source pieces, and the translations are those without the shortlist.
expect build-shortlist 0 "build-shortlist: wrote" -- "$dragoman" build-shortlist --model "$a" \
  --source "$tmp/train.src" --target "$tmp/train.tgt" --per-piece 1 --frequent 0 -o "$tmp/letters.shortlist"
check shortlist-identity awk -F '\t' '!/^#/ && $1 != "" { n++; same += ($1 == $2) } END { exit !(n >= 10 && same == n) }' \
  "$tmp/letters.shortlist"
"$dragoman" translate -m "$a" -i "$tmp/dev.txt" -o "$tmp/dev.full" 2>/dev/null
expect translate-shortlist 0 "40 lines" -- "$dragoman" translate -m "$a" -i "$tmp/dev.txt" -o "$tmp/dev.short" \
  --shortlist "$tmp/letters.shortlist"
check shortlist-same-output cmp "$tmp/dev.full" "$tmp/dev.short"
expect translate-shortlist-int8 0 "40 lines" -- "$dragoman" translate -m "$a" -i "$tmp/dev.txt" -o "$tmp/dev.short8" \
  --shortlist "$tmp/letters.shortlist" --precision int8
printf 'a\tb\nc d\n' >"$tmp/bad.shortlist"
expect shortlist-no-tab 1 "bad.shortlist:2: expected SOURCE_PIECE<TAB>target pieces" -- \
  "$dragoman" translate -m "$a" -i "$tmp/in.txt" --shortlist "$tmp/bad.shortlist"
printf '\tnonsense\n' >"$tmp/bad.shortlist"
expect shortlist-unknown-piece 1 "bad.shortlist:1: the target piece \"nonsense\" is not in the model's vocabulary" -- \
  "$dragoman" translate -m "$a" -i "$tmp/in.txt" --shortlist "$tmp/bad.shortlist"
expect build-shortlist-vocabulary 2 "give --model or --vocabulary" -- "$dragoman" build-shortlist \
  --source "$tmp/train.src" --target "$tmp/train.tgt" -o "$tmp/x.shortlist"
expect serve-shortlist-name 2 'no model is named "nobody"' -- "$dragoman" serve -m "$a" \
  --shortlist "nobody=$tmp/letters.shortlist"

# Usage errors.
expect attention-layer-range 1 "layer 3 of a decoder of 2 layers" -- \
  "$dragoman" translate -m "$a" -i "$tmp/in.txt" --alignment --attention-layer 3
expect attention-head-range 1 "head 3 of 2 heads" -- \
  "$dragoman" translate -m "$a" -i "$tmp/in.txt" --alignment --attention-head 3
expect attention-layer-alone 2 "--attention-layer and --attention-head choose the attention of --alignment" -- \
  "$dragoman" translate -m "$a" -i "$tmp/in.txt" --attention-layer 1
expect alignment-kind 2 "--alignment: sideways not in" -- \
  "$dragoman" translate -m "$a" -i "$tmp/in.txt" --alignment sideways
expect json-and-scores 2 "--scores is for text output" -- \
  "$dragoman" translate -m "$a" -i "$tmp/in.txt" --output-format json --scores
expect output-format 2 "--output-format: xml not in" -- \
  "$dragoman" translate -m "$a" -i "$tmp/in.txt" --output-format xml

echo "translate_outputs_cli: $passes passed, $failures failed"
((failures == 0))
