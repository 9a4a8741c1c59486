#!/usr/bin/env bash
# Data-parallel `dragoman train` across processes (OpenMPI's mpirun), as a user launches it: 2 and 4
# processes train like one process with update_freq 2 and 4 (the same loss curve within float
# reassociation), only process 0 writes the run directory and logs, the run resumes in one process,
# SIGTERM to one process stops every process with a checkpoint (exit 143) and the launch resumes,
# and a process that dies ends the launch instead of leaving the others waiting.
# Usage: train_mpi_cli.sh DRAGOMAN_BINARY MPIRUN
set -uo pipefail
dragoman=$1
mpirun=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"
# As root in CI; more processes than cores; no shared-memory transport tricks a container may lack.
mpi=("$mpirun" --allow-run-as-root --oversubscribe --mca btl self,tcp)

write_reversal_corpus "$tmp/train" 300 1
cat >"$tmp/c.yaml" <<YAML
model: {encoder_layers: 1, decoder_layers: 1, d_model: 16, d_ff: 32, heads: 2, max_positions: 16, dropout: 0.1}
data: {train_source: $tmp/train.src, train_target: $tmp/train.tgt, vocab_size: 25, max_length: 10}
training: {max_tokens: 200, max_steps: 12, warmup_steps: 10, log_every: 2, valid_every: 0, threads: 1}
checkpoint: {every_steps: 6, every_minutes: 0}
YAML

# losses RUN: the training losses of RUN/metrics.jsonl, one a line.
losses() { grep -o '"loss":[^,}]*' "$1/metrics.jsonl" | cut -d: -f2; }
# same_losses A B: as many log lines, each loss within 1e-4 relative.
same_losses() {
  [[ -s $1/metrics.jsonl ]] && paste <(losses "$1") <(losses "$2") | awk -v n="$(losses "$2" | wc -l)" '
    { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 * ($2 > 0 ? $2 : -$2)) bad = 1; rows++ }
    END { exit !(rows == n && rows > 0 && !bad) }'
}

for n in 2 4; do
  expect "single-$n" 0 "done at step 12" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/one-$n" \
    --set "training.update_freq=$n"
  expect "mpi-$n" 0 "$n data-parallel workers \($n processes x 1: cpu\)" -- \
    "${mpi[@]}" -np "$n" "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/mpi-$n"
  check "mpi-$n-same-losses" same_losses "$tmp/mpi-$n" "$tmp/one-$n"
  check "mpi-$n-one-writer" test "$(grep -c '"loss"' "$tmp/mpi-$n/metrics.jsonl")" -eq 6
  check "mpi-$n-one-log" test "$(grep -c "info: step 12 |" "$tmp/mpi-$n/train.log")" -eq 1
done

# Resume in one process (update_freq 2 keeps 2 batches per update); another total is refused.
expect resume-other-total 1 "trains with 2 batches per update" -- "$dragoman" train --run "$tmp/mpi-2" \
  --set training.max_steps=18
expect resume-one-process 0 "resuming from step 12" -- "$dragoman" train --run "$tmp/mpi-2" \
  --set training.max_steps=18 --set training.update_freq=2

# SIGTERM to process 1 only: every process stops after the current update, process 0 saves the
# state of that update (an interrupted checkpoint; or none new when the stop falls on a regular
# checkpoint's step, a multiple of 6, already saved), the launch exits 143, and the same launch
# resumes.
sed -e 's/max_steps: 12/max_steps: 100000/' "$tmp/c.yaml" >"$tmp/long.yaml"
"${mpi[@]}" -np 2 "$dragoman" train -c "$tmp/long.yaml" --run "$tmp/sig" >"$tmp/sig.log" 2>&1 &
launch=$!
wait_for_lines "$tmp/sig/metrics.jsonl" 2
rank1=""
for pid in $(pgrep -f "dragoman train -c $tmp/long.yaml"); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1; then rank1=$pid; fi
done
check sigterm-found-rank-1 test -n "$rank1"
kill -TERM "$rank1"
wait "$launch"
rc=$?
check sigterm-exit-143 test "$rc" -eq 143
check sigterm-message grep -q "interrupted by signal 15 at step" "$tmp/sig.log"
stop_step=$(awk '/interrupted by signal 15 at step/ { sub(/.* at step /, ""); sub(/[^0-9].*/, ""); print; exit }' \
  "$tmp/sig.log")
check sigterm-stop-step test -n "$stop_step"
check sigterm-checkpoint test -n "$(ls "$tmp/sig/checkpoints" |
  grep -E "^(interrupted|checkpoint)-0*${stop_step:-none}\.safetensors$")"
expect sigterm-resume 0 "resuming from step" -- "${mpi[@]}" -np 2 "$dragoman" train -c "$tmp/long.yaml" \
  --run "$tmp/sig" --set training.max_steps=40

# A process killed outright: the launch ends (non-zero, within the timeout) instead of hanging.
"${mpi[@]}" -np 2 "$dragoman" train -c "$tmp/long.yaml" --run "$tmp/kill" >"$tmp/kill.log" 2>&1 &
launch=$!
wait_for_lines "$tmp/kill/metrics.jsonl" 2
for pid in $(pgrep -f "dragoman train -c $tmp/long.yaml --run $tmp/kill"); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1; then kill -KILL "$pid"; fi
done
for ((i = 0; i < 300 && $(kill -0 "$launch" 2>/dev/null && echo 1 || echo 0); i++)); do sleep 0.1; done
check killed-launch-ended bash -c "! kill -0 $launch 2>/dev/null"
kill -KILL "$launch" 2>/dev/null
wait "$launch"
check killed-launch-failed test $? -ne 0

echo "train_mpi_cli: $passes passed, $failures failed"
((failures == 0))
