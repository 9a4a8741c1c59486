#!/usr/bin/env bash
# scripts/tune-decoding.sh on a small, barely trained model (whose output depends on the beam and the
# length penalty): the chosen pair is the one whose dev translation scores best, ties go to the pair
# met first, the table has a row per pair, --keep keeps translate's own outputs, options after --
# reach translate, and bad input stops it with a message naming what is wrong (exit 2).
# Usage: tune_decoding.sh SOURCE_DIR DRAGOMAN_BINARY
set -uo pipefail
root=$1
dragoman=$2
script=$root/scripts/tune-decoding.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/cli/expect.sh
source "$root/tests/cli/expect.sh"

# 40 updates of the reversal task: far from learned, so short and long hypotheses compete.
write_reversal_corpus "$tmp/train" 300 11
write_learning_config "$tmp/c.yaml" "$tmp/train" 1 25
expect train 0 "train: done at step 40" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run" \
  --set training.max_steps=40 --set training.warmup_steps=10
model=$tmp/run/checkpoints/checkpoint-last.safetensors
write_reversal_corpus "$tmp/dev" 40 5

# The references are alpha 4's own translations: alpha 4 must win (BLEU 100) unless alpha 0's
# translations are the same, which this model and dev set do not give (checked first).
"$dragoman" translate -m "$model" -i "$tmp/dev.src" -o "$tmp/ref4.txt" --length-penalty 4 --threads 1 2>/dev/null
"$dragoman" translate -m "$model" -i "$tmp/dev.src" -o "$tmp/out0.txt" --length-penalty 0 --threads 1 2>/dev/null
differ() { ! cmp -s "$1" "$2"; }
check alpha-changes-the-output differ "$tmp/ref4.txt" "$tmp/out0.txt"
chosen=$(bash "$script" --dragoman "$dragoman" --model "$model" --source "$tmp/dev.src" --reference "$tmp/ref4.txt" \
  --alphas "0 4" --keep "$tmp/keep" -- --threads 1 2>"$tmp/table.txt")
check chooses-the-best test "$chosen" = "--beam 4 --length-penalty 4"
check table-row-per-pair test "$(grep -cE '^4 +(0|4) +[0-9.]+ +[0-9.]+$' "$tmp/table.txt")" -eq 2
check table-best-is-100 grep -qE '^4 +4 +100.0000 +1.000$' "$tmp/table.txt"
check says-chosen grep -qF 'chosen: --beam 4 --length-penalty 4 (dev BLEU 100.0000)' "$tmp/table.txt"
check keep-holds-translations cmp -s "$tmp/keep/beam-4.alpha-4.txt" "$tmp/ref4.txt"
check keep-holds-alpha-0 cmp -s "$tmp/keep/beam-4.alpha-0.txt" "$tmp/out0.txt"

# The beam: the references are greedy decoding's (beam 1), which beam 4 does not give here.
"$dragoman" translate -m "$model" -i "$tmp/dev.src" -o "$tmp/ref1.txt" --beam 1 --length-penalty 0 --threads 1 2>/dev/null
check beam-changes-the-output differ "$tmp/ref1.txt" "$tmp/out0.txt"
chosen=$(bash "$script" --dragoman "$dragoman" --model "$model" --source "$tmp/dev.src" --reference "$tmp/ref1.txt" \
  --beams "4 1" --alphas "0" -- --threads 1 2>"$tmp/table.txt")
check chooses-the-beam test "$chosen" = "--beam 1 --length-penalty 0"
check table-row-per-beam test "$(grep -cE '^(4|1) +0 +[0-9.]+ +[0-9.]+$' "$tmp/table.txt")" -eq 2

# --save-to: the chosen settings written into a model file, which then translates with no options
# as with the chosen ones (the original model file untouched).
cp "$model" "$tmp/tuned.safetensors"
chosen=$(bash "$script" --dragoman "$dragoman" --model "$model" --source "$tmp/dev.src" --reference "$tmp/ref4.txt" \
  --alphas "0 4" --save-to "$tmp/tuned.safetensors" -- --threads 1 2>/dev/null)
check save-to-chosen test "$chosen" = "--beam 4 --length-penalty 4"
expect save-to-written 0 "beam 4, length penalty 4, gnmt length normalisation" -- \
  "$dragoman" decoding-defaults "$tmp/tuned.safetensors"
"$dragoman" translate -m "$tmp/tuned.safetensors" -i "$tmp/dev.src" -o "$tmp/tuned.txt" --threads 1 2>/dev/null
check save-to-translates-as-chosen cmp -s "$tmp/tuned.txt" "$tmp/ref4.txt"
expect save-to-original-untouched 0 "no recommended decoding settings" -- "$dragoman" decoding-defaults "$model"

# Equal scores: the first listed wins, whichever it is.
chosen=$(bash "$script" --dragoman "$dragoman" --model "$model" --source "$tmp/dev.src" --reference "$tmp/ref4.txt" \
  --alphas "4 4.0" -- --threads 1 2>/dev/null)
check tie-goes-to-the-first test "$chosen" = "--beam 4 --length-penalty 4"
chosen=$(bash "$script" --dragoman "$dragoman" --model "$model" --source "$tmp/dev.src" --reference "$tmp/ref4.txt" \
  --alphas "4.0 4" -- --threads 1 2>/dev/null)
check tie-goes-to-the-first-again test "$chosen" = "--beam 4 --length-penalty 4.0"

# Options after -- reach translate (a bad one is translate's error).
expect passes-translate-options 2 "translate failed with --beam 4 --length-penalty 0" -- bash "$script" --dragoman "$dragoman" \
  --model "$model" --source "$tmp/dev.src" --reference "$tmp/ref4.txt" --alphas 0 -- --beam-size-typo 3

# Bad input.
head -n 5 "$tmp/ref4.txt" >"$tmp/short.txt"
expect line-counts 2 "dev.src has 40 lines, .*short.txt has 5 \(expected one reference line per source line\)" -- \
  bash "$script" --dragoman "$dragoman" --model "$model" --source "$tmp/dev.src" --reference "$tmp/short.txt"
expect missing-model 2 "nothing.safetensors: no such readable file" -- bash "$script" --dragoman "$dragoman" \
  --model "$tmp/nothing.safetensors" --source "$tmp/dev.src" --reference "$tmp/ref4.txt"
expect bad-alpha 2 "--alphas: 'x' is not a number" -- bash "$script" --dragoman "$dragoman" --model "$model" \
  --source "$tmp/dev.src" --reference "$tmp/ref4.txt" --alphas "0.6 x"
expect alpha-out-of-range 2 "translate failed with --beam 4 --length-penalty 11" -- bash "$script" --dragoman "$dragoman" \
  --model "$model" --source "$tmp/dev.src" --reference "$tmp/ref4.txt" --alphas 11
expect required 2 "--model, --source and --reference are required" -- bash "$script" --dragoman "$dragoman" --model "$model"
expect unknown-argument 2 "unknown argument '--bogus'" -- bash "$script" --bogus
expect bad-beam 2 "--beams: '0' is not a positive whole number" -- bash "$script" --dragoman "$dragoman" \
  --model "$model" --source "$tmp/dev.src" --reference "$tmp/ref4.txt" --beams "4 0"
expect help 2 "Usage: scripts/tune-decoding.sh --model MODEL" -- bash "$script" --help
check inputs-unchanged cmp -s "$tmp/short.txt" <(head -n 5 "$tmp/ref4.txt")

echo "tune_decoding: $passes passed, $failures failed"
((failures == 0))
