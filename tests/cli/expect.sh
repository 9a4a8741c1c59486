# Shared by the CLI test scripts (source it): counters, the expect/check helpers, a toy corpus and a config that learns it.
failures=0
passes=0

# expect NAME EXPECTED_EXIT_CODE PATTERN_IN_OUTPUT -- COMMAND...
# Runs COMMAND (stdout and stderr together) and checks its exit code and that the output matches PATTERN.
expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne $code ]]; then
    echo "FAIL $name: exit code $rc, expected $code; output:"
    echo "$out" | tail -20
    failures=$((failures + 1))
  elif ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: output does not match /$pattern/:"
    echo "$out" | tail -20
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}

# check NAME COMMAND...: passes when COMMAND succeeds.
check() {
  local name=$1
  shift
  if "$@"; then passes=$((passes + 1)); else echo "FAIL $name"; failures=$((failures + 1)); fi
}

# wait_for_lines FILE N: waits (up to 30 s) until FILE exists and holds at least N lines; fails
# otherwise. A background command's redirection may not have created FILE yet when this starts.
wait_for_lines() {
  local file=$1 n=$2 i
  for ((i = 0; i < 300; i++)); do
    if [[ -e $file ]] && (($(wc -l <"$file") >= n)); then return 0; fi
    sleep 0.1
  done
  return 1
}

# write_reversal_corpus PREFIX LINES SEED: PREFIX.src holds LINES lines of 3..7 letters a..j
# (deterministic in SEED), PREFIX.tgt the same lines reversed.
write_reversal_corpus() {
  local prefix=$1 lines=$2 state=$3 i k n
  local letters=(a b c d e f g h i j) src tgt
  : >"$prefix.src"
  : >"$prefix.tgt"
  for ((i = 0; i < lines; i++)); do
    n=$((3 + i % 5))
    src=() tgt=()
    for ((k = 0; k < n; k++)); do
      state=$(((state * 1103515245 + 12345) % 2147483648))
      src+=("${letters[$((state / 65536 % 10))]}")
    done
    for ((k = n - 1; k >= 0; k--)); do tgt+=("${src[$k]}"); done
    echo "${src[*]}" >>"$prefix.src"
    echo "${tgt[*]}" >>"$prefix.tgt"
  done
}

# write_learning_config FILE PREFIX SEED VOCAB: tests/fixtures/reversal/learning.yaml on
# PREFIX.src/.tgt (a reversal corpus): it learns the task in 500 updates (a few seconds).
write_learning_config() {
  sed -e "s|@PREFIX@|$2|g" -e "s|@SEED@|$3|g" -e "s|@VOCAB@|$4|g" \
    "$(dirname "${BASH_SOURCE[0]}")/../fixtures/reversal/learning.yaml" >"$1"
}
