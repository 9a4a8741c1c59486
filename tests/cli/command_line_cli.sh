#!/usr/bin/env bash
# The command line itself, across subcommands: an unknown subcommand names the nearest one;
# --log-level and --quiet work before and after the subcommand; every usage error reads
# "error: ..." plus the help to read, and exits 2; numeric options refuse non-numbers, nan and inf
# and state their bounds readably; --threads is bounded everywhere and warns above the cores;
# outputs that cannot be written are reported before the work (build-vocab, average-checkpoints;
# translate's are in translate_cli.sh).
# Usage: command_line_cli.sh DRAGOMAN_BINARY
set -uo pipefail
dragoman=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

write_reversal_corpus "$tmp/text" 200 3
echo "a b c" >"$tmp/hyp.txt"
echo "a b c" >"$tmp/ref.txt"
printf 'a b\n\xff c\n' >"$tmp/bad-utf8.txt"
touch "$tmp/model.safetensors"  # exists (for --model's check) but is no model
hint="Run 'dragoman [a-z-]+ --help' for more information"

# Unknown subcommands: the nearest name (a swap of two letters is one edit), or the list.
expect unknown-subcommand 2 "^error: unknown subcommand 'trian'; did you mean 'train'\?" -- "$dragoman" trian
expect unknown-subcommand-hint 2 "^Run 'dragoman --help' for more information" -- "$dragoman" trian
expect unknown-subcommand-far 2 "unknown subcommand 'frobnicate' \(expected one of: average-checkpoints, build-shortlist, build-vocab, convert, decoding-defaults, score, score-bleu, serve, train, translate\)" -- \
  "$dragoman" frobnicate
expect unknown-subcommand-after-option 2 "unknown subcommand 'tarnslate'; did you mean 'translate'" -- \
  "$dragoman" --log-level warn tarnslate
expect no-subcommand 2 "^error: a subcommand is required \(one of: average-checkpoints" -- "$dragoman"

# --log-level and --quiet before or after the subcommand: build-vocab logs at info.
vocab=(build-vocab -i "$tmp/text.src" -o "$tmp/v" --vocab-size 20)
expect log-default 0 "info: build-vocab: wrote" -- "$dragoman" "${vocab[@]}"
for where in before after; do
  for quiet in "--log-level warn" "--quiet" "-q"; do
    # shellcheck disable=SC2206  # $quiet is one or two words on purpose
    if [[ $where == before ]]; then args=($quiet "${vocab[@]}"); else args=("${vocab[@]}" $quiet); fi
    out=$("$dragoman" "${args[@]}" 2>&1)
    check "quiet-$where-${quiet// /-}" test $? -eq 0 -a -z "$out"
  done
done
# (at debug, build-vocab passes SentencePiece's own log through)
expect log-level-debug-after 0 "LOG\(INFO\) Loaded all 200 sentences" -- "$dragoman" "${vocab[@]}" --log-level debug
expect quiet-and-log-level 2 "^error: --log-level excludes --quiet" -- "$dragoman" "${vocab[@]}" --quiet --log-level info
expect bad-log-level 2 "^error: --log-level" -- "$dragoman" "${vocab[@]}" --log-level loud

# CLI11's own errors carry the prefix and the subcommand's help.
expect missing-required 2 "^error: --model is required" -- "$dragoman" translate
expect missing-required-hint 2 "^Run 'dragoman translate --help' for more information" -- "$dragoman" translate
expect unexpected-argument 2 "^error: The following argument was not expected: --bogus" -- \
  "$dragoman" score-bleu -r "$tmp/ref.txt" -i "$tmp/hyp.txt" --bogus
# An unknown option: the subcommand's nearest when one is close, and never a hint about its value.
expect unknown-option-near 2 "not expected: .*--widht.*; score-bleu has no option --widht; did you mean --width\?" -- \
  "$dragoman" score-bleu -r "$tmp/ref.txt" -i "$tmp/hyp.txt" --widht 2
expect unknown-option-far 2 "not expected: .*; train has no option --threads \(see its --help\)$" -- \
  "$dragoman" train --threads 2
expect missing-file 2 "^error: --model: File does not exist: .*/none.safetensors" -- \
  "$dragoman" translate -m "$tmp/none.safetensors"

# Numeric options: not a number, out of range, nan, inf. Each is a usage error that says what was
# expected, in readable numbers (never DBL_MAX written out in 309 digits).
check_bad_value() {
  local name=$1 pattern=$2
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne 2 ]] || ! grep -qE -- "^error: $pattern" <<<"$out" || ! grep -qE -- "^$hint" <<<"$out" ||
    grep -qE '[0-9]{20}' <<<"$out"; then
    echo "FAIL $name: exit code $rc; output:"
    echo "$out" | head -5
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}
translate=("$dragoman" translate -m "$tmp/model.safetensors")
check_bad_value beam-not-a-number "--beam: expected an integer from 1 to 1024, got 'abc'" "${translate[@]}" --beam abc
check_bad_value beam-huge "--beam: expected an integer from 1 to 1024, got '1e400'" "${translate[@]}" --beam 1e400
check_bad_value beam-fraction "--beam: expected an integer" "${translate[@]}" --beam 2.5
check_bad_value length-penalty-range "--length-penalty: expected a number from 0 to 10, got '11'" \
  "${translate[@]}" --length-penalty 11
for value in nan inf -inf NaN 1e999; do
  check_bad_value "word-reward-$value" "--word-reward: expected a finite number, got '$value'" \
    "${translate[@]}" --word-reward "$value"
  check_bad_value "length-penalty-$value" "--length-penalty: expected a number from 0 to 10, got '$value'" \
    "${translate[@]}" --length-penalty "$value"
  check_bad_value "max-length-a-$value" "--max-length-a: expected a number from 0 to 1000" \
    "${translate[@]}" --max-length-a "$value"
  check_bad_value "character-coverage-$value" "--character-coverage: expected a number from 0.5 to 1" \
    "$dragoman" "${vocab[@]}" --character-coverage "$value"
  check_bad_value "smooth-value-$value" "--smooth-value: expected a number from 0 to 1000000" \
    "$dragoman" score-bleu -r "$tmp/ref.txt" --smooth-value "$value"
done
check_bad_value max-length-b-negative "--max-length-b: expected an integer from 0 to 1048576, got '-5'" \
  "${translate[@]}" --max-length-b -5
check_bad_value batch-tokens-zero "--batch-tokens: expected an integer from 1 to 1073741824, got '0'" \
  "${translate[@]}" --batch-tokens 0
check_bad_value chunk-lines-word "--chunk-lines: expected an integer" "${translate[@]}" --chunk-lines many
check_bad_value device "--device: expected cpu, cuda or cuda:N, got 'gpu'" "${translate[@]}" --device gpu
check_bad_value last-zero "--last: expected an integer >= 1, got '0'" \
  "$dragoman" average-checkpoints --run "$tmp" --last 0 -o "$tmp/avg.safetensors"
check_bad_value input-sentence-size-negative "--input-sentence-size: expected an integer >= 0, got '-1'" \
  "$dragoman" "${vocab[@]}" --input-sentence-size -1
check_bad_value seed-negative "--seed: expected an integer from 0 to 4294967295, got '-1'" \
  "$dragoman" "${vocab[@]}" --seed -1
check_bad_value width "--width: expected an integer from 0 to 17, got '99'" \
  "$dragoman" score-bleu -r "$tmp/ref.txt" --width 99

# --threads: at most 1024 in every subcommand that has it; more than the cores is a warning.
for command in translate build-vocab score-bleu; do
  case $command in
    translate) args=("${translate[@]}") ;;
    build-vocab) args=("$dragoman" "${vocab[@]}") ;;
    score-bleu) args=("$dragoman" score-bleu -r "$tmp/ref.txt") ;;
  esac
  check_bad_value "threads-bound-$command" "--threads: expected an integer from 0 to 1024, got '1025'" \
    "${args[@]}" --threads 1025
  check_bad_value "threads-negative-$command" "--threads: expected an integer from 0 to 1024, got '-1'" \
    "${args[@]}" --threads -1
done
cores=$(getconf _NPROCESSORS_ONLN)  # (nproc would answer OMP_NUM_THREADS, which the tests set)
over=$((cores + 1))
expect threads-over-cores-score-bleu 0 "warning: score-bleu: --threads $over is more than the $cores cores" -- \
  "$dragoman" score-bleu -r "$tmp/ref.txt" -i "$tmp/hyp.txt" --threads "$over"
expect threads-over-cores-build-vocab 0 "warning: build-vocab: --threads $over is more than the $cores cores" -- \
  "$dragoman" "${vocab[@]}" --threads "$over"

# Outputs are checked before the work: with an input that would fail (invalid UTF-8, not a model)
# the error is about the output.
mkdir "$tmp/dir.model" "$tmp/outdir"
expect vocab-output-missing-dir 1 "^error: cannot write .*/nodir/v.model: directory .*/nodir does not exist" -- \
  "$dragoman" build-vocab -i "$tmp/bad-utf8.txt" -o "$tmp/nodir/v" --vocab-size 20
expect vocab-output-is-directory 1 "^error: cannot write .*/dir.model: it is a directory" -- \
  "$dragoman" build-vocab -i "$tmp/bad-utf8.txt" -o "$tmp/dir" --vocab-size 20
expect vocab-output-not-writable 1 "^error: cannot write /sys/dragoman-v.model: cannot create a file in /sys" -- \
  "$dragoman" build-vocab -i "$tmp/bad-utf8.txt" -o /sys/dragoman-v --vocab-size 20
expect average-output-is-directory 1 "^error: cannot write .*/outdir: it is a directory" -- \
  "$dragoman" average-checkpoints -i "$tmp/model.safetensors" -o "$tmp/outdir"
expect average-output-missing-dir 1 "^error: cannot write .*/nodir/a.safetensors: directory .*/nodir does not exist" -- \
  "$dragoman" average-checkpoints -i "$tmp/model.safetensors" -o "$tmp/nodir/a.safetensors"
expect average-output-not-writable 1 "^error: cannot write /sys/dragoman-a.safetensors: cannot create a file in /sys" -- \
  "$dragoman" average-checkpoints -i "$tmp/model.safetensors" -o /sys/dragoman-a.safetensors
check output-checks-leave-nothing test -z "$(find "$tmp" -name '*.tmp.*')"

echo "command_line_cli: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
