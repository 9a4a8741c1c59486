#!/usr/bin/env bash
# Runs the test suite (ctest -L cpu) again on the older CPU paths, whatever CPU this is, so that a
# machine with AVX-512 and VNNI also tests what an AVX2-only CPU or an AVX-512 CPU without VNNI
# runs:
#   avx2:          ONEDNN_MAX_CPU_ISA=AVX2 (oneDNN's AVX2 kernels: int8 without VNNI, so 7-bit
#                  weights), DRAGOMAN_CPU_ISA=avx2 (our row kernels' AVX2 level),
#                  OPENBLAS_CORETYPE=Haswell: an AVX2-only machine such as a Zen 3
#   avx512-novnni: ONEDNN_MAX_CPU_ISA=AVX512_CORE (AVX-512 without VNNI: Skylake-X),
#                  DRAGOMAN_CPU_ISA=baseline (our SSE2 level)
# A path above what this CPU has is skipped with a message: the suite's ordinary run already is
# that CPU's own path. Prints each run's time. Needs a configured and built BUILD_DIR (scripts/test.sh).
#   BUILD_DIR=build-cpu (default)  JOBS=2 (default)  CPU_PATHS="avx2 avx512-novnni" (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-cpu}
jobs=${JOBS:-2}
[[ -f $build_dir/CTestTestfile.cmake ]] || { echo "test-cpu-paths: $build_dir is not a built build directory" >&2; exit 1; }

flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
has() { [[ $flags == *" $1 "* ]]; }

status=0
summary=()
for path in ${CPU_PATHS:-avx2 avx512-novnni}; do
  case $path in
    avx2)
      if ! has avx2 || ! has fma; then
        summary+=("$path: skipped (this CPU has no AVX2 and FMA)")
        continue
      fi
      settings=(ONEDNN_MAX_CPU_ISA=AVX2 DRAGOMAN_CPU_ISA=avx2 OPENBLAS_CORETYPE=Haswell)
      ;;
    avx512-novnni)
      if ! has avx512f || ! has avx512bw || ! has avx512dq || ! has avx512vl; then
        summary+=("$path: skipped (this CPU has no AVX-512: its own run covers oneDNN without VNNI)")
        continue
      fi
      settings=(ONEDNN_MAX_CPU_ISA=AVX512_CORE DRAGOMAN_CPU_ISA=baseline)
      ;;
    *)
      echo "test-cpu-paths: unknown path '$path' (avx2, avx512-novnni)" >&2
      exit 2
      ;;
  esac
  echo
  echo "== test-cpu-paths: $path: ${settings[*]} ctest -L cpu"
  env "${settings[@]}" "$build_dir/src/dragoman" --version | grep -E '^(CPU|int8)'
  start=$SECONDS
  if (cd "$build_dir" && env "${settings[@]}" ctest -L cpu --output-on-failure -j "$jobs"); then
    summary+=("$path: passed in $((SECONDS - start)) s (${settings[*]})")
  else
    summary+=("$path: FAILED after $((SECONDS - start)) s (${settings[*]})")
    status=1
  fi
done
echo
echo "test-cpu-paths:"
printf '  %s\n' "${summary[@]}"
exit "$status"
