#!/usr/bin/env bash
# End-to-end checks of `dragoman score-bleu` as a user runs it: exit codes (0 ok, 1 error,
# 2 usage error), error messages that name files and lines, standard input, output formats.
# Usage: score_bleu_cli.sh DRAGOMAN_BINARY FIXTURE_DIR (tests/fixtures/bleu)
set -uo pipefail
dragoman=$1
fixtures=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

hyp=$fixtures/de.hyp
ref=$fixtures/de.ref
ref2=$fixtures/de.ref2
sig='version:2\.5\.1\+dragoman'

expect help 0 "score-bleu" -- "$dragoman" --help
expect version 0 "^dragoman [0-9]+\.[0-9]+\.[0-9]+ \(git .*\)" -- "$dragoman" --version
expect no-subcommand 2 "subcommand is required" -- "$dragoman"
expect unknown-option 2 "--no-such-option" -- "$dragoman" score-bleu --no-such-option -r "$ref" -i "$hyp"
expect missing-ref-option 2 "--ref is required" -- "$dragoman" score-bleu -i "$hyp"
expect bad-tokenizer 2 "moses" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --tokenize moses

expect corpus-bleu 0 "^BLEU\|nrefs:1\|case:mixed\|eff:no\|tok:13a\|smooth:exp\|$sig = [0-9]+\.[0-9]{2} [0-9.]+/[0-9.]+/[0-9.]+/[0-9.]+ \(BP = [0-9.]+ ratio = [0-9.]+ hyp_len = [0-9]+ ref_len = [0-9]+\)$" \
  -- "$dragoman" score-bleu -r "$ref" -i "$hyp"
expect two-refs 0 "^BLEU\|nrefs:2\|" -- "$dragoman" score-bleu -r "$ref" -r "$ref2" -i "$hyp"
expect two-refs-one-flag 0 "^BLEU\|nrefs:2\|" -- "$dragoman" score-bleu -r "$ref" "$ref2" -i "$hyp"
# Hypotheses forgotten (or given without -i, so --ref took them) with a terminal on standard input:
# an error at once, not a silent wait for typed lines (script(1) gives the command a terminal).
expect terminal-stdin 2 "no hypotheses: .*terminal.*--ref took 2 files; if '$ref2' holds the hypotheses, give it with -i" \
  -- script -qec "'$dragoman' score-bleu -r '$ref' '$ref2'" /dev/null
expect score-only 0 "^[0-9]+\.[0-9]{4}$" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --score-only
expect score-only-width 0 "^[0-9]+\.[0-9]{2}$" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" -b -w 2
expect short-signature 0 "^BLEU\|#:1\|c:mixed\|e:no\|tok:13a\|s:exp\|v:2\.5\.1\+dragoman = " \
  -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --short
expect json 0 '"name": "BLEU"' -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --json
expect bleu-and-chrf 0 "chrF2\|nrefs:1\|case:mixed\|eff:yes\|nc:6\|nw:0\|space:no\|$sig = " \
  -- "$dragoman" score-bleu -r "$ref" -i "$hyp" -m bleu,chrf
repeated=$("$dragoman" score-bleu -r "$ref" -i "$hyp" -m bleu,bleu | wc -l)
if [[ $repeated -eq 1 ]]; then passes=$((passes + 1)); else
  echo "FAIL repeated-metric: $repeated lines for -m bleu,bleu"; failures=$((failures + 1)); fi
expect sentence-level-json 0 '^\{"name":"BLEU","score":' -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --sentence-level --json
expect chrf-plus-plus 0 "^chrF2\+\+\|" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" -m chrf --chrf-word-order 2
expect smoothing-floor 0 "smooth:floor\[0\.20\]" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --smooth-method floor --smooth-value 0.2
expect sentence-level 0 "eff:yes" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --sentence-level
expect sentence-level-two-metrics 2 "exactly one metric" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --sentence-level -m bleu,chrf

# One line per hypothesis in sentence-level mode.
lines=$("$dragoman" score-bleu -r "$ref" -i "$hyp" --sentence-level | wc -l)
expected_lines=$(wc -l <"$hyp")
if [[ $lines -eq $expected_lines ]]; then passes=$((passes + 1)); else
  echo "FAIL sentence-level-lines: $lines lines for $expected_lines hypotheses"; failures=$((failures + 1)); fi

# Standard input gives the same result as --input.
from_file=$("$dragoman" score-bleu -r "$ref" -i "$hyp")
from_stdin=$("$dragoman" score-bleu -r "$ref" <"$hyp")
if [[ "$from_file" == "$from_stdin" && -n "$from_file" ]]; then passes=$((passes + 1)); else
  echo "FAIL stdin: '$from_stdin' != '$from_file'"; failures=$((failures + 1)); fi

# The paper's tokenized BLEU (--paper LANG): a second line after sacreBLEU's, which says what it is
# (compound splitting by default for German only);
# the number itself is checked against sacremoses + sacreBLEU in tests/eval/test_moses_tokenizer.cpp.
expect paper 0 "^BLEU\|nrefs:1\|case:mixed\|eff:no\|tok:moses-de\+norm\+atat\|smooth:none\|version:multi-bleu\+dragoman = [0-9]+\.[0-9]{2} .*\(tokenized BLEU as in the paper: tensor2tensor's get_ende_bleu.sh \(replace-unicode-punctuation, „ as \"\), Moses tokenizer -l de, ##AT## compound splitting, multi-bleu\.perl\)$" \
  -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --paper de
paper_lines=$("$dragoman" score-bleu -r "$ref" -i "$hyp" --paper de | wc -l)
first_line=$("$dragoman" score-bleu -r "$ref" -i "$hyp" --paper de | head -n 1 | sed 's/^ *//')
plain=$("$dragoman" score-bleu -r "$ref" -i "$hyp")
if [[ $paper_lines -eq 2 && "$first_line" == "$plain" ]]; then passes=$((passes + 1)); else
  echo "FAIL paper-lines: $paper_lines lines, first '$first_line' (plain '$plain')"; failures=$((failures + 1)); fi
expect paper-score-only 0 "^[0-9]+\.[0-9]{4}$" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --paper de -b
expect paper-french-keeps-compounds 0 "tok:moses-fr\|smooth:none" -- "$dragoman" score-bleu -r "$fixtures/fr.ref" \
  -i "$fixtures/fr.hyp" --paper fr
expect paper-french-split 0 "tok:moses-fr\+atat\|smooth:none" -- "$dragoman" score-bleu -r "$fixtures/fr.ref" \
  -i "$fixtures/fr.hyp" --paper fr --paper-compounds split
expect paper-german-keep 0 "tok:moses-de\+norm\|smooth:none.*Moses tokenizer -l de, multi-bleu" -- "$dragoman" \
  score-bleu -r "$ref" -i "$hyp" --paper de --paper-compounds keep
expect paper-german-raw 0 "tok:moses-de\+atat\|smooth:none.*: Moses tokenizer -l de, ##AT##" -- "$dragoman" \
  score-bleu -r "$ref" -i "$hyp" --paper de --paper-punctuation keep
expect paper-french-normalized 0 "tok:moses-fr\+norm\|smooth:none" -- "$dragoman" score-bleu -r "$fixtures/fr.ref" \
  -i "$fixtures/fr.hyp" --paper fr --paper-punctuation normalize
expect paper-bad-punctuation 2 "--paper-punctuation" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --paper de \
  --paper-punctuation maybe
expect paper-bad-compounds 2 "--paper-compounds" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --paper de \
  --paper-compounds maybe
expect paper-aggressive 0 "tok:moses-en-a\|" -- "$dragoman" score-bleu -r "$fixtures/en.ref" \
  -i "$fixtures/en.hyp" --paper en --paper-aggressive-dashes
expect paper-json 0 '"description": "tokenized BLEU as in the paper' -- "$dragoman" score-bleu -r "$ref" -i "$hyp" \
  --paper de --json
expect paper-bad-language 2 "expected a language code in lower case" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" \
  --paper DE
expect paper-sentence-level 2 "does not go with --sentence-level" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" \
  --paper de --sentence-level
expect paper-option-alone 2 "requires --paper" -- "$dragoman" score-bleu -r "$ref" -i "$hyp" --paper-compounds keep

# Bad input: clear errors naming files and lines, exit code 1, inputs untouched.
head -n 3 "$ref" >"$tmp/short.ref"
expect line-count-mismatch 1 "^error: line counts differ: .*de\.hyp has [0-9]+ lines, .*short\.ref has 3 " \
  -- "$dragoman" score-bleu -r "$tmp/short.ref" -i "$hyp"
printf 'gut\nnicht \xff gut\n' >"$tmp/bad.hyp"
printf 'gut\nnicht gut\n' >"$tmp/two.ref"
before=$(md5sum "$tmp/bad.hyp")
expect invalid-utf8 1 "^error: .*bad\.hyp:2: invalid UTF-8 at byte 7 of the line" \
  -- "$dragoman" score-bleu -r "$tmp/two.ref" -i "$tmp/bad.hyp"
if [[ "$(md5sum "$tmp/bad.hyp")" == "$before" ]]; then passes=$((passes + 1)); else
  echo "FAIL input-untouched"; failures=$((failures + 1)); fi
expect missing-file 1 "^error: cannot open $tmp/nope\.txt" -- "$dragoman" score-bleu -r "$ref" -i "$tmp/nope.txt"
: >"$tmp/empty.hyp"
expect empty-hypotheses 1 "empty\.hyp has no lines" -- "$dragoman" score-bleu -r "$tmp/empty.hyp" -i "$tmp/empty.hyp"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
