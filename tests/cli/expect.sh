# Shared by the CLI test scripts (source it): counters and the expect/check helpers.
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
