#!/usr/bin/env bash
# How well translate's word alignments (--alignment) agree with hand alignments, for each decoder
# layer and head of a model: the alignment accuracy (the share of hand-aligned target words whose
# predicted source word is one of their hand-aligned ones) and the alignment error rate
# (AER = 1 - 2|A ∩ G| / (|A| + |G|), A the predicted pairs and G the hand pairs of those words),
# printed as a table. A line counts only where the model's translation is the one the hand
# alignment is of.
# Usage: scripts/alignment-check.sh MODEL [FIXTURE] [DRAGOMAN]
#   FIXTURE: TSV lines "source<TAB>translation<TAB>0-0 1-2 ..." ('#' lines are comments;
#            default tests/fixtures/alignment/demo-en-de.tsv, written for the demo's model)
set -euo pipefail
model=$1
fixture=${2:-tests/fixtures/alignment/demo-en-de.tsv}
dragoman=${3:-${BUILD_DIR:-build}/src/dragoman}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -v '^#' "$fixture" | cut -f1 >"$tmp/source.txt"
# The decoder's layers and heads, from the model file's config.
read -r layers heads < <(python3 - "$model" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
config = json.loads(header["__metadata__"]["model_config"])
print(config["decoder_layers"], config["heads"])
PY
)
echo "alignment-check: $model ($layers decoder layers, $heads heads) against $fixture"
printf '| layer | head | lines compared | target words | accuracy | AER |\n|---:|---|---:|---:|---:|---:|\n'
for ((layer = 1; layer <= layers; layer++)); do
  for head in average $(seq 1 "$heads"); do
    head_option=()
    [[ $head != average ]] && head_option=(--attention-head "$head")
    "$dragoman" translate -m "$model" -i "$tmp/source.txt" --output-format json --alignment \
      --attention-layer "$layer" "${head_option[@]}" 2>/dev/null >"$tmp/out.jsonl"
    python3 - "$fixture" "$tmp/out.jsonl" "$layer" "$head" <<'PY'
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1], encoding="utf-8") if not l.startswith("#")]
outputs = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
lines = words = right = both = predicted = gold = 0
for (source, translation, hand), o in zip(rows, outputs):
    if o["translation"] != translation:
        continue
    lines += 1
    g = {tuple(map(int, p.split("-"))) for p in hand.split()}
    aligned = {t for _, t in g}
    a = {(s, t) for s, t in o["alignment"]}
    a = {(s, t) for s, t in a if t in aligned}  # the hand-aligned target words only
    words += len(aligned)
    right += len(a & g)
    both += len(a & g)
    predicted += len(a)
    gold += len(g)
accuracy = right / words if words else float("nan")
aer = 1 - 2 * both / (predicted + gold) if predicted + gold else float("nan")
print(f"| {sys.argv[3]} | {sys.argv[4]} | {lines} of {len(rows)} | {words} | {accuracy:.3f} | {aer:.3f} |")
PY
  done
done
