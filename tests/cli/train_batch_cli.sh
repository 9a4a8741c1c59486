#!/usr/bin/env bash
# The batch of an update whatever the workers (training.tokens_per_update): 1, 2 and 4 CPU workers
# (and, with MPIRUN, 2 processes) given the same tokens per update derive update_freq 4, 2 and 1,
# log the same batch, train on the same target tokens per update and follow the same loss curve
# within float reassociation; a run resumes on another number of workers; a number of workers that
# misses the batch by more than the margin is refused before the run directory is written, naming
# the max_tokens that would meet it; update_freq and tokens_per_update together are refused.
# Usage: train_batch_cli.sh DRAGOMAN_BINARY [MPIRUN]
set -uo pipefail
dragoman=$1
mpirun=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

write_reversal_corpus "$tmp/train" 300 1
cat >"$tmp/c.yaml" <<YAML
model: {encoder_layers: 1, decoder_layers: 1, d_model: 16, d_ff: 32, heads: 2, max_positions: 16, dropout: 0.1}
data: {train_source: $tmp/train.src, train_target: $tmp/train.tgt, vocab_size: 25, max_length: 10}
training: {max_tokens: 200, tokens_per_update: 800, max_steps: 12, warmup_steps: 10, log_every: 2, valid_every: 0,
           threads: 1}
checkpoint: {every_steps: 6, every_minutes: 0}
YAML

# field RUN NAME: NAME's values in RUN/metrics.jsonl's training lines, one a line.
field() { grep '"loss"' "$1/metrics.jsonl" | grep -o "\"$2\":[^,}]*" | cut -d: -f2; }
# same_curve A B: as many log lines, the losses within 1e-4 relative, the same tokens per update.
same_curve() {
  [[ -s $1/metrics.jsonl ]] && cmp -s <(field "$1" tgt_tokens_per_update) <(field "$2" tgt_tokens_per_update) &&
    paste <(field "$1" loss) <(field "$2" loss) | awk -v n="$(field "$2" loss | wc -l)" '
    { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 * ($2 > 0 ? $2 : -$2)) bad = 1; rows++ }
    END { exit !(rows == n && rows == 6 && !bad) }'
}

declare -A freq=([1]=4 [2]=2 [4]=1)
for n in 1 2 4; do
  expect "workers-$n" 0 "800 tokens per update \(training.tokens_per_update 800\): 4 batches of at most 200 tokens \($n workers? x update_freq ${freq[$n]}\)" \
    -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/cpu-$n" --devices "cpu:$n"
done
check tokens-per-update-logged test "$(field "$tmp/cpu-1" tgt_tokens_per_update | wc -l)" -eq 6
for n in 2 4; do check "workers-$n-same-curve" same_curve "$tmp/cpu-$n" "$tmp/cpu-1"; done
# update_freq given the old way: the same batch and curve.
expect update-freq-given 0 "800 tokens per update: 4 batches" -- "$dragoman" train -c "$tmp/c.yaml" \
  --run "$tmp/given" --set training.tokens_per_update= --set training.update_freq=4
check update-freq-given-same-curve same_curve "$tmp/given" "$tmp/cpu-1"

# The 4-worker run resumes on 1 worker (update_freq 4 derived again) and on 2.
expect resume-one-worker 0 "resuming from step 12.*|1 worker x update_freq 4" -- "$dragoman" train \
  --run "$tmp/cpu-4" --devices cpu --set training.max_steps=14
expect resume-two-workers 0 "2 workers x update_freq 2" -- "$dragoman" train --run "$tmp/cpu-4" --devices cpu:2 \
  --set training.max_steps=16
# Another tokens per update on resume is refused, naming the run's.
expect resume-other-batch 1 "trains with 4 batches per update.*set training.tokens_per_update to the run's 800" -- \
  "$dragoman" train --run "$tmp/cpu-4" --set training.tokens_per_update=1600 --set training.max_steps=18

# 3 workers cannot make 800 from batches of 200 within 10 %: refused before anything is written.
expect three-workers-refused 1 "tokens_per_update 800 cannot be met with training.max_tokens 200 on 3 workers.*set training.max_tokens to 267" \
  -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/three" --devices cpu:3
check three-workers-nothing-written test ! -e "$tmp/three"
expect both-refused 1 "update_freq 2 and training.tokens_per_update 800 both set: give one" -- \
  "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/both" --set training.update_freq=2

# An MPI pair: 2 processes x 1 worker derive update_freq 2, the same batch and curve.
if [[ -n $mpirun ]]; then
  mpi=("$mpirun" --allow-run-as-root --oversubscribe --mca btl self,tcp)
  expect mpi-pair 0 "4 batches of at most 200 tokens \(2 workers x update_freq 2\)" -- \
    "${mpi[@]}" -np 2 "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/mpi"
  check mpi-pair-same-curve same_curve "$tmp/mpi" "$tmp/cpu-1"
fi

echo "train_batch_cli: $passes passed, $failures failed"
((failures == 0))
