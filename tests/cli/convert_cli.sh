#!/usr/bin/env bash
# End-to-end checks of `dragoman convert` on the fixtures of tests/fixtures/marian: a MarianMT
# directory and a Marian decoder.yml become model files that translate takes as they are (the
# MarianMT model greedy, as transformers' generate() did; the Marian model with its decoder.yml's
# beam 4 and normalize 0.6, which translate logs as the model file's settings); bad input is an
# error naming the file and the setting, with exit code 1 and no output file.
# Usage: convert_cli.sh DRAGOMAN_BINARY FIXTURES_DIR
set -uo pipefail
dragoman=$1
fixtures=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

expect convert-hf 0 "convert: wrote .*2 \+ 2 layers, d_model 32, 4 heads, d_ff 64, swish" -- \
  "$dragoman" convert --from hf "$fixtures/hf-tiny" -o "$tmp/hf.safetensors"
expect translate-hf 0 "beam 1, power length normalisation alpha 1, " -- \
  "$dragoman" translate -m "$tmp/hf.safetensors" -i "$fixtures/input.en" -o "$tmp/hf.txt"
check translate-hf-is-generate python3 - "$fixtures/hf-tiny-expected.json" "$tmp/hf.txt" <<'PY'
import json, sys
expected = [line["greedy"]["text"] for line in json.load(open(sys.argv[1], encoding="utf-8"))["lines"]]
got = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
sys.exit(0 if got == expected else 1)
PY
# score --pieces takes translate's target pieces of an imported model (its target table's) and
# gives translate's log-probabilities bit for bit.
"$dragoman" translate -m "$tmp/hf.safetensors" -i "$fixtures/input.en" -o "$tmp/hf.jsonl" --output-format json \
  --word-scores --deterministic 2>/dev/null
python3 -c '
import json, sys
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for line in open(sys.argv[1], encoding="utf-8"):
        pieces = json.loads(line)["pieces"]
        out.write(" ".join(pieces[:-1] if pieces[-1:] == ["</s>"] else pieces) + "\n")
' "$tmp/hf.jsonl" "$tmp/hf-pieces.txt"
expect score-hf-pieces 0 "score: 24 sentence pairs" -- "$dragoman" score -m "$tmp/hf.safetensors" \
  -s "$fixtures/input.en" -t "$tmp/hf-pieces.txt" --pieces --deterministic -o "$tmp/hf-scores.txt"
check score-hf-equals-translate python3 - "$tmp/hf.jsonl" "$tmp/hf-scores.txt" <<'PY'
import json, sys
objects = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
scores = [float(line) for line in open(sys.argv[2], encoding="utf-8")]
sys.exit(0 if len(scores) == len(objects) == 24 and scores == [o["log_prob"] for o in objects] else 1)
PY

expect convert-marian 0 "convert: wrote" -- \
  "$dragoman" convert --from marian "$fixtures/marian-tiny/decoder.yml" -o "$tmp/marian.safetensors"
expect translate-marian 0 "beam 4, power length normalisation alpha 0.6" -- \
  "$dragoman" translate -m "$tmp/marian.safetensors" -i "$fixtures/input.en" -o "$tmp/marian.txt"
# An option given on the command line wins over the model file's; the others stay the file's.
expect translate-marian-given 0 "beam 4, gnmt length normalisation alpha 1.5," -- \
  "$dragoman" translate -m "$tmp/marian.safetensors" -i "$fixtures/input.en" -o "$tmp/marian-given.txt" \
  --length-penalty 1.5 --length-normalization gnmt
expect translate-hf-given-beam 0 "beam 3, power length normalisation alpha 1, " -- \
  "$dragoman" translate -m "$tmp/hf.safetensors" -i "$fixtures/input.en" -o "$tmp/hf-given.txt" --beam 3
check translate-marian-lines test "$(wc -l <"$tmp/marian.txt")" -eq "$(wc -l <"$fixtures/input.en")"
expect marian-npz-with-vocab 0 "convert: wrote" -- \
  "$dragoman" convert --from marian "$fixtures/marian-tiny/model.npz" --vocab "$fixtures/marian-tiny/vocab.yml" \
  --sinusoids concatenated -o "$tmp/marian2.safetensors"

# Without --from the format is told from the input: a MarianMT directory, a Marian model's
# directory (its decoder.yml), a decoder.yml; the same model files as with --from.
expect detect-hf 0 "convert: reading .*hf-tiny \(a directory with config.json" -- \
  "$dragoman" convert "$fixtures/hf-tiny" -o "$tmp/hf-detected.safetensors"
check detect-hf-same cmp "$tmp/hf.safetensors" "$tmp/hf-detected.safetensors"
expect detect-marian-dir 0 "convert: reading .*marian-tiny/decoder.yml \(a directory with decoder.yml" -- \
  "$dragoman" convert "$fixtures/marian-tiny" -o "$tmp/marian-detected.safetensors"
check detect-marian-same cmp "$tmp/marian.safetensors" "$tmp/marian-detected.safetensors"
expect detect-marian-yml 0 "convert: wrote" -- \
  "$dragoman" convert "$fixtures/marian-tiny/decoder.yml" -o "$tmp/marian-yml.safetensors"
# --from that does not match the input names the likely mistake.
expect from-marian-on-hf 1 "hf-tiny is a directory with config.json .*not --from marian: use --from hf, or leave --from out" \
  -- "$dragoman" convert --from marian "$fixtures/hf-tiny" -o "$tmp/bad.safetensors"
expect from-hf-on-npz 1 "model.npz is a .npz archive .*not --from hf: use --from marian" -- \
  "$dragoman" convert --from hf "$fixtures/marian-tiny/model.npz" -o "$tmp/bad.safetensors"
expect undetectable 1 "input.en: cannot tell the model's format: expected a Hugging Face MarianMT directory" -- \
  "$dragoman" convert "$fixtures/input.en" -o "$tmp/bad.safetensors"

# Bad input: exit 1, the file and the problem named, no output.
expect marian-no-vocab 1 "model.npz: no vocabulary: give it with --vocab .*or convert .*marian-tiny/decoder.yml" -- \
  "$dragoman" convert --from marian "$fixtures/marian-tiny/model.npz" -o "$tmp/bad.safetensors"
expect hf-not-a-model 1 "config.json" -- "$dragoman" convert --from hf "$fixtures" -o "$tmp/bad.safetensors"
expect marian-not-npz 1 "source.spm: not a usable .npz archive" -- "$dragoman" convert --from marian \
  "$fixtures/marian-tiny/source.spm" --vocab "$fixtures/marian-tiny/vocab.yml" -o "$tmp/bad.safetensors"
expect hf-with-vocab 2 "--vocab and --spm are for Marian models" -- \
  "$dragoman" convert --from hf "$fixtures/hf-tiny" --vocab "$fixtures/marian-tiny/vocab.yml" -o "$tmp/bad.safetensors"
expect unknown-format 2 "--from" -- "$dragoman" convert --from fairseq "$fixtures/hf-tiny" -o "$tmp/bad.safetensors"
check no-output-written test ! -e "$tmp/bad.safetensors"

echo "convert_cli: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
