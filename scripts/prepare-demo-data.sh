#!/usr/bin/env bash
# Builds the demo corpus data/demo/ from the Debian package trans-de-en (the Ding German-English
# dictionary, GPL-2+, (c) Frank Richter, TU Chemnitz): the dictionary's example sentences, English
# source and German target, as train/dev/test splits. Deterministic: the same package version gives
# the same files. See data/README.md for the format and the licence.
#   scripts/prepare-demo-data.sh [OUT_DIR]      (default data/demo; installs trans-de-en if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-data/demo}
dictionary=/usr/share/trans/de-en

if [[ ! -f $dictionary ]]; then
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get install -y --no-install-recommends trans-de-en >/dev/null
fi
[[ -f $dictionary ]] || { echo "prepare-demo-data: $dictionary not found (apt-get install trans-de-en)" >&2; exit 1; }

mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Each dictionary line is "German | German ... :: English | English ...": the |-separated slots
# correspond one to one, ';' separates alternatives, {...} [...] <...> are annotations, '#' starts a
# comment. A slot gives a pair when the first German and the first English alternative are both
# sentences: three or more words, a capital first letter, ending in '.', '!' or '?' (not an
# abbreviation such as "sb." or "etw.").
LC_ALL=C.UTF-8 awk -F ' :: ' '
  function clean(s) {
    gsub(/\{[^}]*\}|\[[^]]*\]|<[^>]*>/, "", s)
    gsub(/[ \t]+/, " ", s)
    sub(/^ /, "", s)
    sub(/ $/, "", s)
    return s
  }
  function sentence(s) {
    return split(s, words, " ") >= 3 && s ~ /[.!?]$/ && s !~ /(sb|sth|etw|jd[mns])\.$/ && s ~ /^[[:upper:][:digit:]"'"'"'„“‘]/
  }
  /^#/ || NF != 2 { next }
  {
    n = split($1, de, / \| /)
    if (split($2, en, / \| /) != n) next
    for (i = 1; i <= n; i++) {
      split(de[i], de_alt, /;/)
      split(en[i], en_alt, /;/)
      d = clean(de_alt[1])
      e = clean(en_alt[1])
      if (!sentence(d) || !sentence(e) || index(e "\t" d, "\t") != length(e) + 1) continue
      if (seen[e "\t" d]++) continue
      print e "\t" d
    }
  }' "$dictionary" >"$work/pairs.tsv"

# Every 50th pair goes to dev, the next one to test, the rest to train (the dictionary is sorted by
# German headword, so both sample all of it).
awk -F '\t' -v dir="$work" '
  { split_name = (NR % 50 == 0) ? "dev" : (NR % 50 == 1 && NR > 1) ? "test" : "train"
    print $1 > (dir "/" split_name ".en"); print $2 > (dir "/" split_name ".de") }' "$work/pairs.tsv"

for name in train dev test; do
  for lang in en de; do mv "$work/$name.$lang" "$out/$name.$lang.tmp" && mv "$out/$name.$lang.tmp" "$out/$name.$lang"; done
done
version=$(dpkg-query -W -f='${Version}' trans-de-en 2>/dev/null || echo unknown)
echo "prepare-demo-data: $out from trans-de-en $version: $(wc -l <"$out/train.en") train, $(wc -l <"$out/dev.en") dev, $(wc -l <"$out/test.en") test pairs"
