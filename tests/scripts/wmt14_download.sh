#!/usr/bin/env bash
# scripts/wmt14.sh's download path end to end, offline: fake archives laid out as statmt.org's
# (every WMT pair in them, as the real ones; giga-fren's files gzipped inside a tar; the test sets
# as SGML) are served by a stub wget that records the URLs asked for. For EN-DE and EN-FR: exactly
# the archives of the paper's data are fetched, only this pair's files are extracted, the line
# counts are checked against WMT14's (the fake corpora are small, so the script stops naming each
# difference and writes nothing; ALLOW_COUNT_MISMATCH=1 goes on), the training text is the
# corpora concatenated, the test set is read as sacreBLEU reads it, the downloads are removed
# afterwards (KEEP_DOWNLOADS=1 keeps them), and the pipeline trains, averages, translates and
# scores. Given files are checked too: a filtered 2,737-line or Moses-tokenized test set is refused,
# as is a run too short for the checkpoints it averages.
# Usage: wmt14_download.sh REPO_ROOT DRAGOMAN
set -uo pipefail
root=$1
dragoman=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=../cli/expect.sh
source "$root/tests/cli/expect.sh"

# sentences N SEED WORDS...: N lines of 2..5 words drawn from WORDS (deterministic).
sentences() {
  awk -v n="$1" -v seed="$2" -v words="${*:3}" 'BEGIN {
    srand(seed); k = split(words, w, " ");
    for (i = 0; i < n; i++) { m = 2 + int(rand() * 4); s = "";
      for (j = 0; j < m; j++) s = s (j ? " " : "") w[1 + int(rand() * k)]; print s "." } }'
}
en_words="the house is small a cat sees dog big red we go home today"
declare -A tgt_words=([de]="das Haus ist klein eine Katze sieht Hund groß rot wir gehen heute"
                      [fr]="la maison est petite un chat voit chien grand rouge nous allons aujourd'hui")
# corpus DIR NAME N SEED: DIR/NAME.en and DIR/NAME.{de,fr} for both pairs' names.
corpus() {
  local t
  for t in de fr; do
    sentences "$3" "$4" "$en_words" >"$1/${2//@/$t}.en"
    sentences "$3" "$(($4 + 1))" "${tgt_words[$t]}" >"$1/${2//@/$t}.$t"
  done
}
# sgm FILE SETID LANG TEXTFILE: the lines of TEXTFILE as WMT's SGML, with a document break, padded
# segments and an entity (sacreBLEU keeps the text between the tags, stripped and collapsed).
sgm() {
  {
    echo "<$2 setid=\"newstest2014\" srclang=\"any\">"
    echo "<doc sysid=\"ref\" docid=\"1\" genre=\"news\" origlang=\"en\">"
    awk '{ if (NR == 1001) print "</doc>\n<doc sysid=\"ref\" docid=\"2\" genre=\"news\" origlang=\"en\">";
           if (NR == 7) printf "<seg id=\"%d\">  %s  &amp;   more </seg>\n", NR, $0;
           else printf "<seg id=\"%d\">%s</seg>\n", NR, $0 }' "$4"
    echo "</doc>"
    echo "</$2>"
  } >"$1"
}

# statmt.org, as far as the pipeline sees it.
site=$tmp/site/www.statmt.org
build=$tmp/build
mkdir -p "$site/wmt13" "$site/wmt14" "$site/wmt10" "$build"/{europarl/training,cc,nc/training,dev/dev,test/test-full,un/un,giga}
corpus "$build/europarl/training" "europarl-v7.@-en" 40 1
sentences 9 90 "$en_words" >"$build/europarl/training/europarl-v7.cs-en.en"  # another pair: not extracted
corpus "$build/cc" "commoncrawl.@-en" 30 3
corpus "$build/nc/training" "news-commentary-v9.@-en" 20 5
corpus "$build/un/un" "undoc.2000.@-en" 25 7
sentences 35 9 "$en_words" >"$build/giga/giga-fren.release2.fixed.en"
sentences 35 10 "${tgt_words[fr]}" >"$build/giga/giga-fren.release2.fixed.fr"
gzip "$build/giga/giga-fren.release2.fixed.en" "$build/giga/giga-fren.release2.fixed.fr"
corpus "$build/dev/dev" "newstest2013" 3000 11
for t in de fr; do
  sentences 3003 13 "$en_words" >"$build/test/src.$t.txt"
  sentences 3003 14 "${tgt_words[$t]}" >"$build/test/ref.$t.txt"
  sgm "$build/test/test-full/newstest2014-${t}en-src.en.sgm" srcset en "$build/test/src.$t.txt"
  sgm "$build/test/test-full/newstest2014-${t}en-ref.$t.sgm" refset $t "$build/test/ref.$t.txt"
done
tar -czf "$site/wmt13/training-parallel-europarl-v7.tgz" -C "$build/europarl" training
tar -czf "$site/wmt13/training-parallel-commoncrawl.tgz" -C "$build/cc" .  # members as ./commoncrawl...
tar -czf "$site/wmt14/training-parallel-nc-v9.tgz" -C "$build/nc" training
tar -czf "$site/wmt14/dev.tgz" -C "$build/dev" dev
tar -czf "$site/wmt14/test-full.tgz" -C "$build/test" test-full
tar -czf "$site/wmt13/training-parallel-un.tgz" -C "$build/un" un
tar -cf "$site/wmt10/training-giga-fren.tar" -C "$build/giga" giga-fren.release2.fixed.en.gz \
  giga-fren.release2.fixed.fr.gz

# The stub wget: `wget -q --show-progress -O FILE URL` copies the site's file (exit 8, wget's
# "server error", when there is none) and logs the URL.
mkdir -p "$tmp/bin"
cat >"$tmp/bin/wget" <<STUB
#!/usr/bin/env bash
out=""
while [[ \$# -gt 1 ]]; do [[ \$1 == -O ]] && { out=\$2; shift; }; shift; done
echo "\$1" >>"$tmp/wget.log"
path=$tmp/site/\${1#http://}
[[ -f \$path ]] || exit 8
cp "\$path" "\$out"
STUB
chmod +x "$tmp/bin/wget"

tiny=(--set data.vocab_size=50 --set data.vocab_sample=0 --set model.d_model=16 --set model.d_ff=32
      --set model.heads=2 --set model.encoder_layers=1 --set model.decoder_layers=1 --set training.max_steps=10
      --set training.max_tokens=400 --set training.tokens_per_update=400 --set training.warmup_steps=5
      --set training.valid_every=0 --set training.log_every=5 --set checkpoint.every_steps=2 --set training.threads=2)
pipeline() {  # pipeline PAIR DATA_DIR RUN [VAR=VALUE...]
  env PATH="$tmp/bin:$PATH" DATA_DIR="$2" DRAGOMAN="$dragoman" TRAIN_ARGS="${tiny[*]}" "${@:4}" bash "$root/scripts/wmt14.sh" "$1" base "$3"
}

declare -A urls=([de]="wmt13/training-parallel-europarl-v7.tgz wmt13/training-parallel-commoncrawl.tgz
wmt14/training-parallel-nc-v9.tgz wmt14/dev.tgz wmt14/test-full.tgz")
urls[fr]="${urls[de]} wmt13/training-parallel-un.tgz wmt10/training-giga-fren.tar"
declare -A pairs=([de]=$((40 + 30 + 20)) [fr]=$((40 + 30 + 25 + 20 + 35)))  # the fake corpora's
for t in de fr; do
  data=$tmp/data-$t
  # The fake counts are not WMT14's: the script stops, names every difference, writes no text.
  : >"$tmp/wget.log"
  pipeline "en-$t" "$data" "$tmp/run-$t" >"$tmp/refused.log" 2>&1
  check "$t-counts-refused" test $? -eq 1
  check "$t-counts-named" grep -q "news-commentary-v9.$t-en: 20 lines, WMT14 has" "$tmp/refused.log"
  check "$t-counts-listed" grep -q "all training pairs: ${pairs[$t]} lines, WMT14 has" "$tmp/refused.log"
  check "$t-no-text-written" test ! -e "$data/train.en" -a ! -e "$data/train.en.part"
  check "$t-downloads-kept-for-retry" test -s "$data/raw/test-full.tgz"
  check "$t-urls" test "$(sort "$tmp/wget.log" | tr '\n' ' ')" == \
    "$(for u in ${urls[$t]}; do echo "http://www.statmt.org/$u"; done | sort | tr '\n' ' ')"
  check "$t-only-this-pair" test ! -e "$data/raw/training/europarl-v7.cs-en.en"
  # Told to go on: the data, the downloads removed, the whole pipeline.
  : >"$tmp/wget.log"
  expect "$t-pipeline" 0 "tok:moses-$t" -- pipeline "en-$t" "$data" "$tmp/run-$t" ALLOW_COUNT_MISMATCH=1
  check "$t-no-second-download" test ! -s "$tmp/wget.log"
  check "$t-train-lines" test "$(wc -l <"$data/train.en")" -eq "${pairs[$t]}" -a "$(wc -l <"$data/train.$t")" -eq "${pairs[$t]}"
  check "$t-test-set" test "$(wc -l <"$data/newstest2014.$t")" -eq 3003 -a "$(wc -l <"$data/newstest2013.en")" -eq 3000
  check "$t-sacrebleu-extraction" test "$(sed -n 7p "$data/newstest2014.$t")" == "$(sed -n 7p "$build/test/ref.$t.txt") &amp; more"
  check "$t-raw-removed" test ! -e "$data/raw"
  check "$t-translated" test "$(wc -l <"$tmp/run-$t/newstest2014.$t")" -eq 3003
done
# The EN-FR training text is the five corpora in order, giga-fren's decompressed.
check fr-order cmp "$tmp/data-fr/train.fr" <(cat "$build"/europarl/training/europarl-v7.fr-en.fr \
  "$build"/cc/commoncrawl.fr-en.fr "$build"/un/un/undoc.2000.fr-en.fr \
  "$build"/nc/training/news-commentary-v9.fr-en.fr <(gzip -dc "$build"/giga/giga-fren.release2.fixed.fr.gz))
# KEEP_DOWNLOADS=1 keeps them.
expect keep-downloads 0 "kept the archives" -- pipeline en-de "$tmp/keep" "$tmp/run-keep" ALLOW_COUNT_MISMATCH=1 \
  KEEP_DOWNLOADS=1
check keep-downloads-there test -s "$tmp/keep/raw/dev.tgz"
# A download that fails says so and leaves no partial file.
rm "$site/wmt14/dev.tgz"
expect failed-download 1 "could not download http://www.statmt.org/wmt14/dev.tgz" -- \
  pipeline en-de "$tmp/fail" "$tmp/run-fail"
check failed-download-no-part test ! -e "$tmp/fail/raw/dev.tgz.part"

# Given files: a filtered (2,737-line) or tokenized test set is refused; a short run's averaging too.
given=$tmp/given
mkdir -p "$given"
cp "$tmp/data-de"/{train,newstest2013}.* "$given/"
head -n 2737 "$tmp/data-de/newstest2014.en" >"$given/newstest2014.en"
head -n 2737 "$tmp/data-de/newstest2014.de" >"$given/newstest2014.de"
expect filtered-test-set 1 "newstest2014: 2,737 lines, the paper's newstest2014 has 3,003 \(the filtered set" -- \
  pipeline en-de "$given" "$tmp/run-given"
sed 's/\.$/ ./' "$tmp/data-de/newstest2014.de" >"$given/newstest2014.de"
cp "$tmp/data-de/newstest2014.en" "$given/newstest2014.en"
expect tokenized-test-set 1 "newstest2014.de: 3,003 lines look Moses-tokenized" -- pipeline en-de "$given" \
  "$tmp/run-given"
cp "$tmp/data-de/newstest2014.de" "$given/newstest2014.de"
expect too-few-checkpoints 1 "makes 2 checkpoints, fewer than the 5 to average" -- pipeline en-de "$given" \
  "$tmp/run-given" "TRAIN_ARGS=${tiny[*]} --set checkpoint.every_steps=5"
check too-few-nothing-trained test ! -e "$tmp/run-given"
expect cpu-note 0 "note: training on the CPU \(training.devices cpu\)" -- pipeline en-de "$given" "$tmp/run-given"

echo "wmt14_download: $passes passed, $failures failed"
((failures == 0))
