#!/usr/bin/env bash
# The op test bodies are registered in both test binaries and the CPU's own tests in the CPU's only
# (tests/ops/op_testing.h): each TEST_CASE of the given files is listed by both binaries, each
# DRAGOMAN_CPU_TEST_CASE by dragoman_tests and not by dragoman_cuda_tests. Listing needs no GPU.
#   Usage: op_bodies_listed.sh DRAGOMAN_TESTS DRAGOMAN_CUDA_TESTS FILE...
set -euo pipefail
cpu_tests=$1 cuda_tests=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# (Catch2 v2 exits with the number of tests listed.)
"$cpu_tests" --list-test-names-only >"$work/cpu" || true
"$cuda_tests" --list-test-names-only >"$work/cuda" || true
status=0 bodies=0
for file in "$@"; do
  # A test's name is the first string literal after the macro (names here hold no '"').
  while IFS=$'\t' read -r kind name; do
    # A template test is listed once per type: "NAME - float", "NAME - double".
    listed() {
      if [[ $kind == *TEMPLATE* ]]; then grep -F -- "$name - " "$1" | grep -c ''; else grep -cxF -- "$name" "$1"; fi
    }
    listed_cpu=$(listed "$work/cpu" || true)
    listed_cuda=$(listed "$work/cuda" || true)
    [[ $kind == *TEMPLATE* && $listed_cpu -gt 0 ]] && listed_cpu=1
    if [[ $kind == TEST_CASE ]]; then
      bodies=$((bodies + 1))
      [[ $listed_cpu == 1 && $listed_cuda == 1 ]] ||
        { echo "$file: op body not in both binaries (cpu $listed_cpu, cuda $listed_cuda): $name"; status=1; }
    else
      [[ $listed_cpu == 1 && $listed_cuda == 0 ]] ||
        { echo "$file: CPU test listed wrongly (cpu $listed_cpu, cuda $listed_cuda): $name"; status=1; }
    fi
  done < <(sed -nE 's/^(DRAGOMAN_CPU_TEMPLATE_TEST_CASE|DRAGOMAN_CPU_TEST_CASE|TEST_CASE)\("([^"]*)".*/\1\t\2/p' "$file")
done
(( bodies > 0 )) || { echo "no op body found in $*"; status=1; }
echo "$bodies op bodies in both binaries"
exit $status
