#!/usr/bin/env bash
# `cmake --install` as a user runs it: the binary goes into PREFIX/bin and works from any directory
# (its libraries found through the installed RPATH), its help names it `dragoman` (not the build
# path), and the notices go into PREFIX/share/doc/dragoman.
# Usage: install_cli.sh BUILD_DIR
set -uo pipefail
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

expect install 0 "Installing: $tmp/prefix/bin/dragoman" -- cmake --install "$build" --prefix "$tmp/prefix"
check installed-binary test -x "$tmp/prefix/bin/dragoman"
check installed-readme test -s "$tmp/prefix/share/doc/dragoman/README.md"
check installed-notices test -s "$tmp/prefix/share/doc/dragoman/third_party/moses/LICENSE"
expect installed-version 0 "^dragoman [0-9]+\.[0-9]+\.[0-9]+ \(git " -- \
  env -u LD_LIBRARY_PATH bash -c "cd / && '$tmp/prefix/bin/dragoman' --version"
expect installed-usage 0 "^Usage: dragoman translate \[OPTIONS\]" -- \
  bash -c "cd / && '$tmp/prefix/bin/dragoman' translate --help"
printf 'the cat sat on the mat\n' >"$tmp/ref.txt"
expect installed-runs 0 "^BLEU\|nrefs:1\|.* = 100\.0" -- \
  bash -c "cd / && '$tmp/prefix/bin/dragoman' score-bleu -r '$tmp/ref.txt' -i '$tmp/ref.txt'"

echo "install_cli: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
