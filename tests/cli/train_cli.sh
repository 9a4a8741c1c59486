#!/usr/bin/env bash
# End-to-end checks of `dragoman train` as a user runs it: the vocabulary built into the run
# directory, config errors (exit 1, naming the key and file), data errors naming the file,
# SIGTERM -> checkpoint + exit 143 -> the same command resumes, the run-directory guard and lock,
# a typo then its fix, a damaged newest checkpoint, a diverging run, signals while the vocabulary
# is built or the corpus encoded, resuming without -c from another directory, and
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
expect again-is-done 0 "already finished at step 20" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run"
check train-log grep -q "already finished at step 20" "$tmp/run/train.log"
check train-log-appended test "$(grep -c "train: config" "$tmp/run/train.log")" -eq 2
expect longer 0 "train: done at step 30" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run" --set training.max_steps=30

# Validation BLEU: the dev set translated (greedy) and scored at each validation.
expect valid-bleu 0 "valid step 10 .* \| bleu [0-9]+\.[0-9]{2} \(beam 1," -- "$dragoman" train -c "$tmp/c.yaml" \
  --run "$tmp/bleu-run" --set training.valid_bleu=true --set training.valid_beam=1
check valid-bleu-metrics test "$(grep -c '"valid_bleu"' "$tmp/bleu-run/metrics.jsonl")" -eq 2
check valid-translation test "$(wc -l <"$tmp/bleu-run/valid-translation.txt")" -eq 20
check valid-translations-kept test "$(ls "$tmp/bleu-run/valid-translations")" = "$(printf '00000010.txt\n00000020.txt')"
check valid-translation-latest cmp -s "$tmp/bleu-run/valid-translation.txt" "$tmp/bleu-run/valid-translations/00000020.txt"

# average-checkpoints over the run's last checkpoints (10, 20, 30), by run or by name.
expect average-run 0 "wrote .*avg.safetensors \(2 files, step 30\)" -- \
  "$dragoman" average-checkpoints --run "$tmp/run" --last 2 --output "$tmp/avg.safetensors"
check average-output test -s "$tmp/avg.safetensors"
expect average-inputs 0 "3 files" -- "$dragoman" average-checkpoints -o "$tmp/avg3.safetensors" \
  -i "$tmp/run/checkpoints/checkpoint-00000010.safetensors" "$tmp/run/checkpoints/checkpoint-00000020.safetensors" \
  "$tmp/run/checkpoints/checkpoint-00000030.safetensors"
expect average-too-few 1 "3 complete checkpoints, fewer than --last 4 \(a run keeps its last checkpoint.keep_last checkpoints" -- \
  "$dragoman" average-checkpoints --run "$tmp/run" --last 4 --output "$tmp/x.safetensors"
expect average-nothing 2 "give --inputs, or --run and --last" -- "$dragoman" average-checkpoints -o "$tmp/x.safetensors"
expect average-missing 2 "nothing\.safetensors" -- \
  "$dragoman" average-checkpoints -i "$tmp/nothing.safetensors" -o "$tmp/x.safetensors"
check average-nothing-written test ! -e "$tmp/x.safetensors"

# Errors: exit 1 and a message naming what is wrong and where.
printf 'training:\n  max_step: 5\n' >"$tmp/bad.yaml"
expect unknown-key 1 "bad.yaml.*training.max_step'; did you mean 'training.max_steps'\?" -- "$dragoman" train -c "$tmp/bad.yaml" --run "$tmp/x"
expect bad-set 1 "--set model.heads=two" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/x" --set model.heads=two
expect model-too-large 1 "the model config has .* parameters .* lower model.d_model" -- "$dragoman" train \
  -c "$tmp/c.yaml" --run "$tmp/too-large" --set model.d_model=1048576 --set model.d_ff=1048576
expect missing-config 2 "bad2.yaml" -- "$dragoman" train -c "$tmp/bad2.yaml" --run "$tmp/x"
head -n 299 "$tmp/train.tgt" >"$tmp/short.tgt"
expect line-counts 1 "train.src has 300 lines but .*short.tgt has 299" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/y" --set "data.train_target=$tmp/short.tgt"
expect other-config 1 "another config.*model.d_ff: 32 -> 48" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run" --set model.d_ff=48
expect overwrite 0 "train: done at step 20" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run" --set model.d_ff=48 --overwrite
expect threads-bound 1 "training.threads must be from 0 .* to 1024" -- "$dragoman" train -c "$tmp/c.yaml" \
  --run "$tmp/z" --set training.threads=2000
expect precision-name 1 "training.precision must be fp32, bf16 or fp16" -- "$dragoman" train -c "$tmp/c.yaml" \
  --run "$tmp/z" --set training.precision=fp8
# --devices (alias --device) sets training.devices; a device this machine lacks is refused before
# the run directory is written (cuda:99: no machine has it; a CPU-only build has no CUDA at all).
expect devices-dump 0 "devices: .cuda:0." -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/z" --devices cuda:0 \
  --dump-config
expect device-alias 0 "devices: .cuda:2." -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/z" --device cuda:2 \
  --dump-config
expect missing-device 1 "training.devices cuda:99: (no such CUDA device|this build of dragoman has no CUDA)" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/z" --devices cuda:99
check missing-device-nothing-written test ! -e "$tmp/z"
expect mixed-devices 2 "not mixed" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/z" \
  --devices cpu:2,cuda:0
expect bad-device 2 "'gpu' is not a device" -- "$dragoman" train -c "$tmp/c.yaml" \
  --run "$tmp/z" --device gpu

# --dump-config prints the resolved config (data paths absolute) and touches nothing; `key=` resets.
expect dump-config 0 "max_steps: 7" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/dump" \
  --set training.max_steps=7 --dump-config
expect dump-config-reset 0 'valid_source: ""' -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/dump" \
  --set data.valid_source= --set data.valid_target= --dump-config
check dump-config-nothing-written test ! -e "$tmp/dump"
# ... checked as train checks it: a combination train refuses is refused, saying how to clear it.
expect dump-config-checked 1 "not both .*clear it: --set training.lr_factor=" -- "$dragoman" train -c "$tmp/c.yaml" \
  --run "$tmp/dump" --set training.lr=0.001 --set training.lr_factor=0.5 --dump-config

# A typo, then the corrected command: nothing of the failed start stands in the way.
expect typo-path 1 "config key data.train_source: no such file: $tmp/trian.src" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/typo" \
  --set "data.train_source=$tmp/trian.src"
expect typo-heads 1 "heads" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/typo" --set model.heads=3
check typo-nothing-written test ! -e "$tmp/typo/config.yaml"
expect typo-filtered 1 "no training pairs left" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/typo" \
  --set data.max_length=1
expect typo-fixed 0 "train: done at step 20" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/typo" \
  --set model.d_ff=48

# Without -c, a run resumes from its own config.yaml, from any working directory (paths are stored
# absolute); a relative path in a config file is relative to that file's directory, wherever train
# is started (a copied config finds its corpus), one in --set to the working directory.
mkdir -p "$tmp/rel"
sed -e "s#$tmp/#../#" "$tmp/c.yaml" >"$tmp/rel/c.yaml"
expect relative-start 0 "done at step 20" -- bash -c "cd '$tmp/rel' && '$dragoman' train -c c.yaml --run r"
check relative-stored-absolute grep -q "train_source: \"$tmp/train.src\"" "$tmp/rel/r/config.yaml"
expect relative-elsewhere 0 "train_source: \"$tmp/train.src\"" -- \
  bash -c "cd / && '$dragoman' train -c '$tmp/rel/c.yaml' --run '$tmp/rel/r2' --dump-config"
expect relative-set-cwd 1 "config key data.valid_source: no such file: /dev.src" -- \
  bash -c "cd / && '$dragoman' train -c '$tmp/rel/c.yaml' --run '$tmp/rel/r2' --set data.valid_source=dev.src"
expect resume-without-config 0 "done at step 30" -- bash -c "cd / && '$dragoman' train --run '$tmp/rel/r' \
  --set training.max_steps=30"
expect no-config-no-run 1 "no --config given and .*nothing/config.yaml does not exist" -- \
  "$dragoman" train --run "$tmp/nothing"

# A damaged newest checkpoint is set aside; the run resumes from the one before.
cp -r "$tmp/typo" "$tmp/damaged"
truncate -s 1000 "$tmp/damaged/checkpoints/checkpoint-00000020.safetensors"
expect damaged-newest 0 "cannot resume from .*checkpoint-00000020.safetensors.*setting it aside" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/damaged" --set model.d_ff=48 --set training.max_steps=30
check damaged-set-aside test -e "$tmp/damaged/checkpoints/checkpoint-00000020.safetensors.damaged"
check damaged-resumed-from-10 grep -q "resuming from step 10" "$tmp/damaged/train.log"

# A diverging run (an absurd learning rate from step 20 on) stops at the first non-finite update,
# exit 1, and the last checkpoint stays the last good one; a sane learning rate resumes from it.
expect diverged 1 "update 2[1-9] gave a non-finite .*stopping without applying it" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/typo" --set model.d_ff=48 --set training.max_steps=40 \
  --set training.lr_factor=1e30
check diverged-no-new-checkpoint test "$(ls "$tmp/typo/checkpoints" | grep -E '^(checkpoint|interrupted)-[0-9]+' |
  tr '\n' ' ')" = "checkpoint-00000010.safetensors checkpoint-00000010.state.safetensors \
checkpoint-00000020.safetensors checkpoint-00000020.state.safetensors "
expect diverged-checkpoint-loads 0 "wrote" -- "$dragoman" average-checkpoints --run "$tmp/typo" --last 1 \
  -o "$tmp/last-good.safetensors"
expect diverged-resume 0 "resuming from step 20" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/typo" \
  --set model.d_ff=48 --set training.max_steps=22

# A model file whose bytes were damaged into NaN is refused, naming the tensor.
python3 - "$tmp/last-good.safetensors" "$tmp/nan.safetensors" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
name, info = next((k, v) for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32")
start = 8 + n + info["data_offsets"][0] + 4 * 5
open(sys.argv[2], "wb").write(data[:start] + struct.pack("<f", float("nan")) + data[start + 4:])
PY
expect nan-model 1 "nan.safetensors: tensor '.*' holds a non-finite value .* at element 5" -- \
  "$dragoman" average-checkpoints -i "$tmp/nan.safetensors" -o "$tmp/x.safetensors"

# SIGINT while the vocabulary is built, or the corpus encoded (minutes at WMT scale), stops within
# a second with exit 130, and writes no vocabulary and no checkpoint.
awk 'BEGIN { srand(7); split("a b c d e f g h i j", L, " ")
  for (i = 0; i < 400000; i++) { n = 3 + i % 5; s = ""; t = ""
    for (k = 0; k < n; k++) w[k] = L[int(rand() * 10) + 1]
    for (k = 0; k < n; k++) { s = s (k ? " " : "") w[k]; t = t (k ? " " : "") w[n - 1 - k] }
    print s > "'"$tmp"'/big.src"; print t > "'"$tmp"'/big.tgt" } }'
# interrupt_when NAME PATTERN RUN ARGS...: starts train, sends SIGINT once PATTERN is logged, and
# checks the exit code and that it ended within a second of the signal.
interrupt_when() {
  local name=$1 pattern=$2 run=$3 pid rc start end
  shift 3
  "$dragoman" train -c "$tmp/c.yaml" --run "$run" --set "data.train_source=$tmp/big.src" \
    --set "data.train_target=$tmp/big.tgt" "$@" >"$run.log" 2>&1 &
  pid=$!
  for ((i = 0; i < 300; i++)); do
    grep -q "$pattern" "$run.log" 2>/dev/null && break
    sleep 0.05
  done
  sleep 0.2
  start=$(date +%s%N)
  kill -INT "$pid"
  wait "$pid"
  rc=$?
  end=$(date +%s%N)
  check "$name-exit-130" test "$rc" -eq 130
  check "$name-within-a-second" test $(((end - start) / 1000000)) -lt 1000
  check "$name-message" grep -q "stopped by a signal before the first update; no checkpoint written" "$run.log"
  check "$name-no-checkpoint" test -z "$(ls "$run/checkpoints" 2>/dev/null)"
}
interrupt_when vocab-sigint "building a shared" "$tmp/int-vocab" --set data.vocab_sample=0
check vocab-sigint-no-vocabulary test ! -e "$tmp/int-vocab/vocab.model"
"$dragoman" build-vocab --input "$tmp/train.src" "$tmp/train.tgt" --vocab-size 25 --output "$tmp/letters" \
  >/dev/null 2>&1
interrupt_when encode-sigint "corpus: encoding" "$tmp/int-encode" --set "data.vocabulary=$tmp/letters.model"

# SIGTERM: the run saves a checkpoint and exits 143; the same command resumes from it.
"$dragoman" train -c "$tmp/c.yaml" --run "$tmp/sig" --set training.max_steps=1000000 \
  --set training.log_every=1 >"$tmp/sig.log" 2>&1 &
pid=$!
for ((i = 0; i < 600; i++)); do
  [[ -s $tmp/sig/metrics.jsonl ]] && break
  sleep 0.1
done
# A second trainer on the same run directory is refused, naming the one that holds it.
expect second-trainer 1 "in use by another .dragoman train. \(pid $pid on " -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/sig" --set training.max_steps=1000000 --set training.log_every=1
kill -TERM "$pid"
wait "$pid"
rc=$?
check sigterm-exit-143 test "$rc" -eq 143
check sigterm-message grep -q "interrupted by signal 15 at step" "$tmp/sig.log"
step=$(sed -n 's/.*interrupted by signal 15 at step \([0-9]*\).*/\1/p' "$tmp/sig.log")
check sigterm-checkpoint test -s "$tmp/sig/checkpoints/checkpoint-last.safetensors"
# Stopped between scheduled checkpoints (every 10 updates), the state is an interrupted checkpoint:
# resumed from, never averaged.
if ((${step:-0} % 10 != 0)); then
  check sigterm-interrupted-kind test -s "$tmp/sig/checkpoints/interrupted-$(printf %08d "$step").safetensors"
fi
check sigterm-regular-only test -z "$(ls "$tmp/sig/checkpoints" | grep '^checkpoint-[0-9]*\.safetensors' |
  sed 's/checkpoint-0*\([0-9][0-9]*\)\.safetensors/\1/' | awk '$1 % 10 != 0')"
expect sigterm-resume 0 "resuming from step ${step:-X}" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/sig" --set "training.max_steps=$((${step:-0} + 2))" \
  --set training.log_every=1

# A time budget (--max-minutes, training.max_minutes) with a decaying schedule: the run ends at the
# count it fixes or at training.max_steps, whichever is smaller, annealed to zero there (here, at
# this machine's speed, usually max_steps: 60 updates before the calibration's window closes; the
# count itself is tested with simulated paces in tests/train/test_budget.cpp). With inverse_sqrt the
# budget only stops the run.
"$dragoman" train -c "$tmp/c.yaml" --run "$tmp/budget" --max-minutes 0.5 --set training.lr_decay=linear \
  --set training.max_steps=60 --set training.log_every=1 >"$tmp/budget.log" 2>&1
check budget-linear-exit-0 test $? -eq 0
last=$(grep '"lr"' "$tmp/budget/metrics.jsonl" | tail -n 1)
ended=$(sed -n 's/.*"step":\([0-9]*\),.*/\1/p' <<<"$last")
check budget-annealed grep -q '"lr":0.0,' <<<"$last"
check budget-ends-by-60 test "${ended:-99}" -le 60
expect budget-finished 0 "already finished at step ${ended:-X}" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/budget" --max-minutes 0.5 --set training.lr_decay=linear \
  --set training.max_steps=60 --set training.log_every=1
expect budget-inverse-sqrt 0 "the time budget, training.max_minutes, is spent" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/budget-isqrt" --max-minutes 0.02 --set training.max_steps=0
expect budget-negative 2 "max-minutes" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/x" --max-minutes -1

# Signals reach one thread of dragoman's own, never a thread doing work (a handler's frame on a
# oneDNN GEMM kernel's stack lands in the heap): every thread but one blocks SIGINT and SIGTERM.
# Updates of a few seconds each here, so that signals arrive while one runs.
slow=(--set model.d_model=256 --set model.d_ff=1024 --set model.encoder_layers=2 --set model.decoder_layers=2
  --set training.update_freq=80 --set training.max_steps=1000000 --set training.log_every=1
  --set training.threads=2 --set checkpoint.every_steps=1000)
# start_slow RUN: starts a slow run in the background (pid in $pid) and waits for its first update.
start_slow() {
  "$dragoman" train -c "$tmp/c.yaml" --run "$1" "${slow[@]}" >"$1.log" 2>&1 &
  pid=$!
  for ((i = 0; i < 600; i++)); do
    [[ -s $1/metrics.jsonl ]] && break
    sleep 0.1
  done
}
start_slow "$tmp/mask"
blocking=0 open=0
for status in /proc/"$pid"/task/*/status; do
  mask=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$status")
  if (((0x$mask & 0x4002) == 0x4002)); then blocking=$((blocking + 1)); else open=$((open + 1)); fi
done
check signal-one-receiving-thread test "$open" -eq 1
check signal-workers-block test "$blocking" -ge 2
# Two signals in the same millisecond (coreutils timeout sends one to the command, one to its
# process group) are one request: the run still saves its state.
kill -INT "$pid"
kill -INT "$pid"
wait "$pid"
rc=$?
check duplicate-sigint-exit-130 test "$rc" -eq 130
check duplicate-sigint-saves grep -q "interrupted by signal 2 at step .*checkpoint saved" "$tmp/mask.log"
# A second signal later than that ends the process at once, saving nothing more. The run must still
# be inside its update when the second arrives, however slow the machine or late the shell: updates
# ten times as long (tens of seconds), both signals within the first (its batches read: the corpus's
# "epoch 2" line). (Sent after a first update of a few seconds, the pair once found the run already
# saved and gone, in CI.)
"$dragoman" train -c "$tmp/c.yaml" --run "$tmp/twice" "${slow[@]}" --set training.update_freq=800 \
  >"$tmp/twice.log" 2>&1 &
pid=$!
for ((i = 0; i < 600; i++)); do
  grep -q "train: epoch 2" "$tmp/twice.log" && break
  sleep 0.1
done
kill -INT "$pid"
sleep 0.5
kill -INT "$pid"
wait "$pid"
rc=$?
check second-sigint-exit-130 test "$rc" -eq 130
check second-sigint-no-save test -z "$(grep "checkpoint saved" "$tmp/twice.log")"

# The status line on a terminal (script(1) gives train one): drawn after updates and at the end
# (20/20, full), every log line written above it from the line's start; --no-progress and a
# standard error that is not a terminal show none.
script -qec "'$dragoman' train -c '$tmp/c.yaml' --run '$tmp/bar-run'" /dev/null >"$tmp/bar.out" 2>&1
check bar-drawn grep -qE 'train \[#{20}\] 20/20 updates \| loss [0-9.]+ \| ETA 0:00:00' "$tmp/bar.out"
# (each log line follows "\r\e[K", which takes the status line away: none starts mid-line)
sed 's/\r\x1b\[K/\n/g' "$tmp/bar.out" | tr -d '\r' >"$tmp/bar.lines"
check bar-log-lines-whole test "$(grep -c '^\[[0-9-]* [0-9:]*\] .*step [0-9]* | epoch' "$tmp/bar.lines")" -eq 4
check bar-done-below grep -qE '^\[[0-9-]+ [0-9:]+\] .*train: done at step 20' "$tmp/bar.lines"
script -qec "'$dragoman' train -c '$tmp/c.yaml' --run '$tmp/bar-run2' --no-progress" /dev/null >"$tmp/nobar.out" 2>&1
check no-progress-flag grep -q "train: done at step 20" "$tmp/nobar.out"
check no-progress-no-bar test -z "$(grep -a 'train \[' "$tmp/nobar.out")"
"$dragoman" train -c "$tmp/c.yaml" --run "$tmp/bar-run3" 2>"$tmp/plain.err" >/dev/null
check no-terminal-no-bar test -z "$(grep -a -e 'train \[' -e $'\r' "$tmp/plain.err")"
check no-terminal-log grep -q "train: done at step 20" "$tmp/plain.err"

# A restart does not read unchanged training files again (train.inputs.json: size, time, inode);
# a changed file is read, checked and encoded again; touched but the same, it is read and the
# cache still serves.
mkdir -p "$tmp/stamp"
cp "$tmp/train.src" "$tmp/train.tgt" "$tmp/stamp/"
sed -e "s|$tmp/train.src|$tmp/stamp/train.src|; s|$tmp/train.tgt|$tmp/stamp/train.tgt|" "$tmp/c.yaml" >"$tmp/stamp.yaml"
expect stamp-first 0 "corpus: encoding .*stamp/train.src" -- "$dragoman" train -c "$tmp/stamp.yaml" --run "$tmp/stamp/run"
check stamp-recorded grep -q '"hash"' "$tmp/stamp/run/train.inputs.json"
expect stamp-unchanged 0 "training files are as they were checked .*not read again" -- "$dragoman" train \
  --run "$tmp/stamp/run" --set training.max_steps=22
touch -d "2001-01-01" "$tmp/stamp/train.tgt"
"$dragoman" train --run "$tmp/stamp/run" --set training.max_steps=24 >"$tmp/stamp/touched.log" 2>&1
check stamp-touched-read bash -c "! grep -q 'not read again' '$tmp/stamp/touched.log' && ! grep -q 'corpus: encoding' '$tmp/stamp/touched.log' && grep -q 'done at step 24' '$tmp/stamp/touched.log'"
echo "a b c" >>"$tmp/stamp/train.src"
expect stamp-changed-checked 1 "stamp/train.src has 301 lines but .*stamp/train.tgt has 300" -- "$dragoman" train \
  --run "$tmp/stamp/run" --set training.max_steps=26

echo "train_cli: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
