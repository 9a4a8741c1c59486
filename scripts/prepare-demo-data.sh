#!/usr/bin/env bash
# Builds the demo corpus data/demo/ (English source, German target; train/dev/test) from Debian's own
# human translations, with apt and dpkg-deb: the German package descriptions of bookworm's main
# component (apt's Translation-de index, matched to Translation-en), the German gettext catalogs of a
# few packages, and the example sentences of the Ding dictionary (trans-de-en).
# scripts/demo-corpus.py does the reading, cleaning, de-duplication and splitting; data/README.md
# says what comes out, and the licences. What is downloaded is cached in OUT_DIR/cache (about 25 MB):
# a second run needs no network. Nothing derived from the packages is committed.
#   scripts/prepare-demo-data.sh [OUT_DIR]     (default data/demo)
#   DEBIAN_MIRROR=http://deb.debian.org/debian  DEBIAN_SUITE=bookworm  DEMO_DATA_REFRESH=1 (fetch again)
# Needs no root: apt runs on a private state directory in the cache (its own sources.list and
# index lists), so the system's apt configuration and lists are left as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-data/demo}
cache=$out/cache
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${DEBIAN_SUITE:-bookworm}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
# Packages whose German catalogs have many strings per megabyte (about 5 MB of .deb in all).
catalog_packages=(libreoffice-l10n-de gcc-12-locales util-linux-locales e2fsprogs-l10n gnupg-l10n)

die() { echo "prepare-demo-data: $*" >&2; exit 1; }
for tool in apt-get dpkg-deb python3 /usr/lib/apt/apt-helper; do
  command -v "$tool" >/dev/null || die "$tool not found (a Debian system with apt and python3 is needed)"
done
[[ -f $keyring ]] || die "$keyring not found (apt-get install debian-archive-keyring)"

mkdir -p "$cache/apt/lists/partial" "$cache/apt/archives/partial" "$cache/apt/sources.list.d" "$cache/debs"
cache=$(cd "$cache" && pwd)
echo "deb [signed-by=$keyring] $mirror $suite main" >"$cache/apt/sources.list"
# '#clear' empties the Languages list that Docker images set to "none"; downloads as root skip the
# _apt sandbox, which may not reach a directory under a home directory.
cat >"$cache/apt/apt.conf" <<EOF
#clear Acquire::Languages;
Acquire::Languages { "en"; "de"; };
Dir::State::Lists "$cache/apt/lists";
Dir::Cache "$cache/apt";
Dir::Etc::SourceList "$cache/apt/sources.list";
Dir::Etc::SourceParts "$cache/apt/sources.list.d";
APT::Sandbox::User "$(id -un)";
EOF
private_apt() { apt-get -q -c "$cache/apt/apt.conf" "$@"; }
index() { find "$cache/apt/lists" -maxdepth 1 -name "*_dists_${suite}_main_i18n_Translation-$1*" | head -n 1; }

if [[ ${DEMO_DATA_REFRESH:-0} == 1 || -z $(index de) || -z $(index en) ]]; then
  echo "prepare-demo-data: apt-get update ($mirror $suite main, Translation-en and -de) into $cache/apt"
  private_apt update >"$cache/apt/update.log" 2>&1 || { cat "$cache/apt/update.log" >&2; die "apt-get update failed (above)"; }
  [[ -n $(index de) ]] || die "$mirror $suite main has no Translation-de index (see $cache/apt/update.log)"
  [[ ${DEMO_DATA_REFRESH:-0} == 1 ]] && rm -f "$cache"/debs/*.deb
fi
for package in "${catalog_packages[@]}" trans-de-en; do
  if ! compgen -G "$cache/debs/${package}_*.deb" >/dev/null; then
    echo "prepare-demo-data: apt-get download $package"
    (cd "$cache/debs" && private_apt download "$package" >/dev/null) || die "apt-get download $package failed"
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for deb in "$cache"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/root" || die "$deb: dpkg-deb could not extract it"
done
/usr/lib/apt/apt-helper cat-file "$(index de)" >"$work/Translation-de"
/usr/lib/apt/apt-helper cat-file "$(index en)" >"$work/Translation-en"
mapfile -t catalogs < <(find "$work/root" -path '*/de/LC_MESSAGES/*.mo' | LC_ALL=C sort)
dictionary=$work/root/usr/share/trans/de-en
[[ -f $dictionary ]] || die "trans-de-en's .deb in $cache/debs has no /usr/share/trans/de-en"

mkdir -p "$out"
python3 scripts/demo-corpus.py --out "$out" --descriptions "$work/Translation-de" "$work/Translation-en" \
  --catalog "${catalogs[@]}" --dictionary "$dictionary" | tee "$work/counts"

# Provenance: where each part came from, and the counts.
{
  echo "Built by scripts/prepare-demo-data.sh on $(date -u +%Y-%m-%d) from $mirror $suite main:"
  echo "  Translation-de and Translation-en indexes of $(sed -n 's/^Date: //p' "$(find "$cache/apt/lists" -maxdepth 1 -name "*_dists_${suite}_InRelease" | head -n 1)")"
  for deb in "$cache"/debs/*.deb; do echo "  $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)"; done
  echo
  cat "$work/counts"
} >"$out/SOURCES.txt"
echo "prepare-demo-data: $out: $(wc -l <"$out/train.en") train, $(wc -l <"$out/dev.en") dev, $(wc -l <"$out/test.en") test pairs (provenance in $out/SOURCES.txt)"
