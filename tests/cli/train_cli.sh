#!/usr/bin/env bash
# End-to-end checks of `dragoman train` as a user runs it: the vocabulary built into the run
# directory, config errors (exit 1, naming the key and file), data errors naming the file,
# SIGTERM -> checkpoint + exit 143 -> the same command resumes, the run-directory guard, and
# average-checkpoints over the run.
# Usage: train_cli.sh DRAGOMAN_BINARY
set -uo pipefail
dragoman=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

# A reversal task: 300 lines of letters; the target is the source reversed.
write_reversal_corpus "$tmp/train" 300 1
head -n 20 "$tmp/train.src" >"$tmp/dev.src"
head -n 20 "$tmp/train.tgt" >"$tmp/dev.tgt"
cat >"$tmp/c.yaml" <<YAML
model:
  encoder_layers: 1
  decoder_layers: 1
  d_model: 16
  d_ff: 32
  heads: 2
  max_positions: 16
data:
  train_source: $tmp/train.src
  train_target: $tmp/train.tgt
  valid_source: $tmp/dev.src
  valid_target: $tmp/dev.tgt
  vocab_size: 25
  max_length: 10
training:
  max_tokens: 200
  max_steps: 20
  warmup_steps: 10
  log_every: 5
  valid_every: 10
  threads: 1
checkpoint:
  every_steps: 10
  every_minutes: 0
YAML

# A short run: vocabulary built into the run directory, checkpoints, metrics.
expect train 0 "train: done at step 20" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run"
check vocab-built test -s "$tmp/run/vocab.model"
check config-saved test -s "$tmp/run/config.yaml"
check checkpoint test -s "$tmp/run/checkpoints/checkpoint-00000020.safetensors"
check metrics test "$(grep -c '"lr"' "$tmp/run/metrics.jsonl")" -eq 4
expect again-is-done 0 "resuming from step 20" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run"
expect longer 0 "train: done at step 30" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run" --set training.max_steps=30

# Validation BLEU: the dev set translated (greedy) and scored at each validation.
expect valid-bleu 0 "valid step 10 .* \| bleu [0-9]+\.[0-9]{2} \(beam 1," -- "$dragoman" train -c "$tmp/c.yaml" \
  --run "$tmp/bleu-run" --set training.valid_bleu=true --set training.valid_beam=1
check valid-bleu-metrics test "$(grep -c '"valid_bleu"' "$tmp/bleu-run/metrics.jsonl")" -eq 2
check valid-translation test "$(wc -l <"$tmp/bleu-run/valid-translation.txt")" -eq 20

# average-checkpoints over the run's last checkpoints (10, 20, 30), by run or by name.
expect average-run 0 "wrote .*avg.safetensors \(2 files, step 30\)" -- \
  "$dragoman" average-checkpoints --run "$tmp/run" --last 2 --output "$tmp/avg.safetensors"
check average-output test -s "$tmp/avg.safetensors"
expect average-inputs 0 "3 files" -- "$dragoman" average-checkpoints -o "$tmp/avg3.safetensors" \
  -i "$tmp/run/checkpoints/checkpoint-00000010.safetensors" "$tmp/run/checkpoints/checkpoint-00000020.safetensors" \
  "$tmp/run/checkpoints/checkpoint-00000030.safetensors"
expect average-too-few 1 "3 complete checkpoints, fewer than --last 4" -- \
  "$dragoman" average-checkpoints --run "$tmp/run" --last 4 --output "$tmp/x.safetensors"
expect average-nothing 2 "give --inputs, or --run and --last" -- "$dragoman" average-checkpoints -o "$tmp/x.safetensors"
expect average-missing 2 "nothing\.safetensors" -- \
  "$dragoman" average-checkpoints -i "$tmp/nothing.safetensors" -o "$tmp/x.safetensors"
check average-nothing-written test ! -e "$tmp/x.safetensors"

# Errors: exit 1 and a message naming what is wrong and where.
printf 'training:\n  max_step: 5\n' >"$tmp/bad.yaml"
expect unknown-key 1 "bad.yaml.*training.max_step" -- "$dragoman" train -c "$tmp/bad.yaml" --run "$tmp/x"
expect bad-set 1 "--set model.heads=two" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/x" --set model.heads=two
expect missing-config 2 "bad2.yaml" -- "$dragoman" train -c "$tmp/bad2.yaml" --run "$tmp/x"
head -n 299 "$tmp/train.tgt" >"$tmp/short.tgt"
expect line-counts 1 "train.src has 300 lines but .*short.tgt has 299" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/y" --set "data.train_target=$tmp/short.tgt"
expect other-config 1 "another config.*model.d_ff: 32 -> 48" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run" --set model.d_ff=48
expect overwrite 0 "train: done at step 20" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run" --set model.d_ff=48 --overwrite
expect cuda-device 1 "CPU only" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/z" --device cuda:0

# SIGTERM: the run saves a checkpoint and exits 143; the same command resumes from it.
"$dragoman" train -c "$tmp/c.yaml" --run "$tmp/sig" --set training.max_steps=1000000 \
  --set training.log_every=1 >"$tmp/sig.log" 2>&1 &
pid=$!
for ((i = 0; i < 600; i++)); do
  [[ -s $tmp/sig/metrics.jsonl ]] && break
  sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
rc=$?
check sigterm-exit-143 test "$rc" -eq 143
check sigterm-message grep -q "interrupted by signal 15 at step" "$tmp/sig.log"
step=$(sed -n 's/.*interrupted by signal 15 at step \([0-9]*\).*/\1/p' "$tmp/sig.log")
check sigterm-checkpoint test -s "$tmp/sig/checkpoints/checkpoint-last.safetensors"
expect sigterm-resume 0 "resuming from step ${step:-X}" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/sig" --set "training.max_steps=$((${step:-0} + 2))" \
  --set training.log_every=1

echo "train_cli: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
