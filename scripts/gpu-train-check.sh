#!/usr/bin/env bash
# `dragoman train --devices cuda:0` from the command line, as a user runs it (scripts/gpu-check.sh's
# train-cli step): a synthetic corpus made here (random words; the target is the source's words in
# reverse order), the vocabulary built into the run, 1,000 updates in bf16 with validation BLEU on the
# GPU, a resume on the CPU from the GPU's checkpoint, that checkpoint translated on the CPU and
# scored, then translated on the GPU (f32 and bf16, compared with the CPU's) and timed there; a second
# training of 200 updates must repeat the first's log lines bit for bit. Fails unless the loss falls
# to less than half its first value, the rerun repeats it and every command exits 0.
#   Usage: [OTHER_DRAGOMAN=path] scripts/gpu-train-check.sh DRAGOMAN WORK_DIR
set -euo pipefail
dragoman=$1
work=$2
rm -rf "$work"
mkdir -p "$work"

# corpus NAME LINES SEED: sentences of 3-8 words of 2-3 letters.
corpus() {
  awk -v out="$work/$1" -v lines="$2" -v seed="$3" 'BEGIN {
    srand(seed); letters = "abcdefghijklmnopqrstuvwxyz"
    for (i = 0; i < lines; i++) {
      n = 3 + int(rand() * 6); s = ""; t = ""
      for (j = 0; j < n; j++) {
        w[j] = ""; for (k = 0; k < 2 + int(rand() * 2); k++) w[j] = w[j] substr(letters, 1 + int(rand() * 26), 1)
      }
      for (j = 0; j < n; j++) { s = s (j ? " " : "") w[j]; t = t (j ? " " : "") w[n - 1 - j] }
      print s > (out ".src"); print t > (out ".tgt")
    } }'
}
corpus train 20000 1
corpus dev 200 2

cat >"$work/config.yaml" <<EOF
model: {encoder_layers: 2, decoder_layers: 2, d_model: 128, d_ff: 256, heads: 4, dropout: 0.1, max_positions: 64}
data: {train_source: $work/train.src, train_target: $work/train.tgt, valid_source: $work/dev.src,
       valid_target: $work/dev.tgt, vocab_size: 400, max_length: 60}
training: {max_tokens: 4096, max_steps: 1000, lr: 0.001, warmup_steps: 100, log_every: 50, valid_every: 500,
           valid_bleu: true, precision: bf16}
checkpoint: {every_steps: 500, every_minutes: 0}
EOF

"$dragoman" train -c "$work/config.yaml" --run "$work/run" --devices cuda:0
grep -q '"device_memory_mib"' "$work/run/metrics.jsonl"
first=$(grep -v valid_ "$work/run/metrics.jsonl" | head -n 1 | sed 's/.*"loss":\([^,]*\).*/\1/')
last=$(grep -v valid_ "$work/run/metrics.jsonl" | tail -n 1 | sed 's/.*"loss":\([^,]*\).*/\1/')
echo "training loss: first log line $first, last $last"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a / 2) }'

# The same training again for 200 updates, on the first run's vocabulary: the GPU's sums run in fixed
# orders (no atomics), so the first four log lines (loss, gradient norm) must be the first run's, to
# the last bit. With OTHER_DRAGOMAN=path (another build), that one trains the same 200 updates and is
# compared likewise: "same bits as OTHER_DRAGOMAN" or the first line that differs (not a failure: a
# change may mean to round differently; the line says so).
# loss_lines RUN: the first four training log lines' step, loss and gnorm.
loss_lines() { grep -v valid_ "$1/metrics.jsonl" | head -n 4 | sed 's/.*"gnorm":\([^,]*\),"loss":\([^,]*\),.*"step":\([0-9]*\).*/\3 \2 \1/'; }
rerun() {
  "$1" train -c "$work/config.yaml" --run "$2" --devices cuda:0 --set "data.vocabulary=$work/run/vocab.model" \
    --set training.max_steps=200 --set training.valid_every=0 --set checkpoint.every_steps=0 2>"$2.log" ||
    { tail -n 20 "$2.log" >&2; return 1; }
}
rerun "$dragoman" "$work/rerun"
echo "first run's log lines (step, loss, gnorm):"
loss_lines "$work/run"
if [[ "$(loss_lines "$work/run")" == "$(loss_lines "$work/rerun")" ]]; then
  echo "rerun: the same bits"
else
  echo "rerun: DIFFERENT (GPU training is not deterministic):"
  loss_lines "$work/rerun"
  exit 1
fi
if [[ -n ${OTHER_DRAGOMAN:-} ]]; then
  rerun "$OTHER_DRAGOMAN" "$work/other"
  if [[ "$(loss_lines "$work/run")" == "$(loss_lines "$work/other")" ]]; then
    echo "same bits as OTHER_DRAGOMAN ($("$OTHER_DRAGOMAN" --version | sed -n 1p))"
  else
    echo "other bits than OTHER_DRAGOMAN ($("$OTHER_DRAGOMAN" --version | sed -n 1p)):"
    loss_lines "$work/other"
  fi
fi

# The GPU's checkpoint resumes on the CPU (20 more updates) and translates there.
"$dragoman" train --run "$work/run" --devices cpu --set training.max_steps=1020
"$dragoman" translate --model "$work/run/checkpoints/checkpoint-00001000.safetensors" --input "$work/dev.src" \
  --output "$work/dev.hyp" --beam 4
"$dragoman" score-bleu -r "$work/dev.tgt" -i "$work/dev.hyp"

# The same checkpoint translated on the GPU (translate --device): f32 agrees with the CPU's output,
# bf16 nearly; then the GPU's speed on 20,000 lines (the summary line's tokens/s), f32 and bf16.
"$dragoman" translate --model "$work/run/checkpoints/checkpoint-00001000.safetensors" --input "$work/dev.src" \
  --output "$work/dev.gpu.hyp" --beam 4 --device cuda:0
"$dragoman" translate --model "$work/run/checkpoints/checkpoint-00001000.safetensors" --input "$work/dev.src" \
  --output "$work/dev.bf16.hyp" --beam 4 --device cuda:0 --precision bf16
echo "GPU f32 vs CPU f32:"
"$dragoman" score-bleu -r "$work/dev.hyp" -i "$work/dev.gpu.hyp"
echo "GPU bf16 vs CPU f32:"
"$dragoman" score-bleu -r "$work/dev.hyp" -i "$work/dev.bf16.hyp"
head -n 20000 "$work/train.src" >"$work/speed.src"
for precision in fp32 bf16; do
  "$dragoman" translate --model "$work/run/checkpoints/checkpoint-00001000.safetensors" --input "$work/speed.src" \
    --output "$work/speed.$precision.hyp" --beam 4 --device cuda:0 --precision "$precision" 2>&1 | grep "source tokens/s"
done
