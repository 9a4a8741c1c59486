#!/usr/bin/env python3
"""Builds the demo corpus (English -> German) from files that come with Debian packages: the
translated package descriptions (apt's Translation-de index, matched to Translation-en by
Description-md5), German gettext catalogs (.mo) and the example sentences of the Ding dictionary
(trans-de-en). scripts/prepare-demo-data.sh fetches the files with apt and dpkg-deb and runs this;
data/README.md says what comes out and why. Standard library only.

    demo-corpus.py --out DIR [--descriptions TRANSLATION-de TRANSLATION-en] [--catalog FILE.mo ...]
                   [--dictionary /usr/share/trans/de-en] [--dev N] [--test N]

Writes DIR/{train,dev,test}.{en,de,origin} (.origin: the source of each pair) and prints the pairs of each source at each stage. Bad input (a
file that is not a .mo catalog, a malformed index record, an unreadable file) stops it with an error
naming the file (and line), exit 1.

The splits: every pair gets a *template key*, its English words (lowercased) less those that also
occur in its German side (names, numbers, identifiers a translator copies) -- "This package
contains the Python 3 module for foo." and the same sentence about bar share one key. Pairs whose
key is empty (the German repeats every English word: a name, a copied string) are dropped. The keys
of pairs with 3 to 50 English words are ordered by their hash; the first --test keys give the test
set and the next --dev keys the dev set, one pair per key, and no other pair with any of those keys
is trained on: no test source, nor a template of it with other names filled in, is in training.
"""
import argparse
import hashlib
import html
import os
import re
import struct
import sys
import unicodedata


class CorpusError(Exception):
    """Bad input, with a message that names the file (and line)."""


# --- gettext catalogs ----------------------------------------------------------------------------

MO_MAGIC = 0x950412DE


def read_mo(path):
    """The (msgid, msgstr) pairs of a GNU .mo file, header entry excluded, in file order. A msgid
    with a context ("ctx\\x04text") loses the context; plural entries ("one\\0many") give their
    singular forms. Raises CorpusError naming the file when it is not a well-formed .mo file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CorpusError(f"{path}: cannot read: {e.strerror}") from None
    if len(data) < 28:
        raise CorpusError(f"{path}: not a gettext .mo file ({len(data)} bytes, shorter than its header)")
    for order in "<>":
        if struct.unpack(order + "I", data[:4])[0] == MO_MAGIC:
            break
    else:
        raise CorpusError(f"{path}: not a gettext .mo file (magic number 0x{data[:4].hex()}, expected 950412de)")
    revision, count, ids_at, strs_at = struct.unpack(order + "4I", data[4:20])
    if revision >> 16 > 1:
        raise CorpusError(f"{path}: .mo format revision {revision >> 16}.{revision & 0xFFFF} is not supported")

    def string(table, i, what):
        at = table + 8 * i
        if at + 8 > len(data):
            raise CorpusError(f"{path}: truncated .mo file ({what} table of {count} entries ends past the file)")
        length, offset = struct.unpack(order + "2I", data[at:at + 8])
        if offset + length > len(data):
            raise CorpusError(f"{path}: truncated .mo file ({what} {i} at bytes {offset}-{offset + length}, "
                              f"file has {len(data)})")
        try:
            return data[offset:offset + length].decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorpusError(f"{path}: {what} {i} is not UTF-8 (byte {offset + e.start})") from None

    entries = []
    for i in range(count):
        msgid, msgstr = string(ids_at, i, "msgid"), string(strs_at, i, "msgstr")
        if msgid == "":
            continue  # the header (Project-Id-Version, Content-Type...)
        msgid = msgid.split("\x04", 1)[-1].split("\x00", 1)[0]
        entries.append((msgid, msgstr.split("\x00", 1)[0]))
    return entries


# LibreOffice's accelerator is '~', GTK's '_', Qt's and Windows' '&' (before a letter, not an entity).
ACCELERATOR = re.compile(r"~(?=\w)|_(?=\w)|&(?=\w)(?!#?\w+;)")
TAG = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>")
# What cannot be translated as text: printf conversions (%s, %1$d, %qs, %<...%>), numbered and named
# slots (%1, %FOO, $1, $(ARG1), $NAME$, {0}, {name}), pinentry's |A| prefixes.
PLACEHOLDER = re.compile(r"%[-+#0']*\d*(?:\$|\.\d+)?(?:hh|ll|[hlqLjzt])*[a-zA-Z%<>]|%\d|%[A-Z]{2,}|\$\(?\w+\)?"
                         r"|\{\w*\}|^\||\t")
OPTION_COLUMN = re.compile(r"^\s*-{1,2}\w[^\t]*?(?:\s{2,}|\t)(\S.*)$")


def clean_catalog_string(text):
    """One line of a catalog string as plain text, or None when it is not one: accelerators and
    markup removed, entities decoded, %PRODUCTNAME filled in, a usage line's option column cut off;
    None for a line with placeholders."""
    text = text.replace("%PRODUCTNAME", "LibreOffice").replace("%PRODUCTVERSION", "7.4")
    text = text.strip()
    if text.startswith("-"):
        m = OPTION_COLUMN.match(text)
        if not m:
            return None
        text = m.group(1)
    if len(ACCELERATOR.findall(text)) == 1:  # one is an accelerator; several are identifiers
        text = ACCELERATOR.sub("", text)
    text = html.unescape(TAG.sub("", text))
    if PLACEHOLDER.search(text):
        return None
    return text


def catalog_pairs(entries):
    """Cleaned (English, German) pairs of one catalog's entries (untranslated ones skipped). A string
    of several lines gives a pair per line when both sides have as many non-blank lines (wrapped
    usage screens do not)."""
    for msgid, msgstr in entries:
        lines_en = [line for line in msgid.split("\n") if line.strip()]
        lines_de = [line for line in msgstr.split("\n") if line.strip()]
        if len(lines_en) != len(lines_de):
            continue
        for en, de in zip(lines_en, lines_de):
            en, de = clean_catalog_string(en), clean_catalog_string(de)
            if en and de:
                yield en, de


# --- package descriptions --------------------------------------------------------------------------

def read_translation_index(path, lang):
    """{Description-md5: (short, long lines)} of a Translation-LANG index (deb822 records). The long
    lines are the continuation lines without their first space ("." is a paragraph break). Raises
    CorpusError naming the file and line for a malformed record."""
    field = "Description-" + lang
    index = {}
    record, current, start = {}, None, 1

    def finish(line_no):
        if not record:
            return
        if field not in record:
            raise CorpusError(f"{path}:{start}: record without {field} (is this a Translation-{lang} index?)")
        if "Description-md5" not in record:
            raise CorpusError(f"{path}:{start}: record without Description-md5")
        short, *long_lines = record[field]
        index[record["Description-md5"][0].strip()] = (short.strip(), long_lines)

    try:
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line.strip():
                    finish(line_no)
                    record, current, start = {}, None, line_no + 1
                elif line[0] in " \t":
                    if current is None:
                        raise CorpusError(f"{path}:{line_no}: continuation line outside a field")
                    record[current].append(line[1:])
                else:
                    name, colon, value = line.partition(":")
                    if not colon or not name or " " in name:
                        raise CorpusError(f"{path}:{line_no}: expected 'Field: value', got {line[:40]!r}")
                    current = name
                    record[name] = [value.strip()]
            finish(line_no + 1 if record else 0)
    except UnicodeDecodeError as e:
        raise CorpusError(f"{path}: not UTF-8 ({e.reason} at byte {e.start} of a line)") from None
    except OSError as e:
        raise CorpusError(f"{path}: cannot read: {e.strerror}") from None
    if not index:
        raise CorpusError(f"{path}: no {field} records")
    return index


BULLET = re.compile(r"^\s*(?:[-*+o\u2022\u00b7]|\d{1,2}[.)])\s+(\S.*)$")
# Abbreviations after which a full stop does not end a sentence (English and German).
ABBREVIATIONS = {
    "e.g", "i.e", "etc", "vs", "approx", "incl", "cf", "no", "dr", "mr", "mrs", "ms", "st", "jr", "inc",
    "z.b", "d.h", "u.a", "bzw", "ca", "usw", "evtl", "ggf", "inkl", "bspw", "vgl", "sog", "zzgl", "nr",
    "u.u", "o.ä", "s.o", "s.u", "i.d.r", "z.t", "v.a", "u.ä", "ggfs", "max", "min", "bzgl", "dt", "engl",
}
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\u201e\u201c\u00bb]?[A-Z\u00c4\u00d6\u00dc0-9])")


def split_sentences(text):
    """Sentences of a paragraph: a split after '.', '!' or '?' before a capital or digit, except
    after an abbreviation or a single letter (an initial, "z. B.")."""
    pieces = SENTENCE_END.split(text)
    sentences = []
    for piece in pieces:
        if sentences:
            last_word = sentences[-1].rsplit(" ", 1)[-1].rstrip(".").lower()
            if len(last_word) <= 1 or last_word in ABBREVIATIONS or last_word.replace(". ", ".") in ABBREVIATIONS:
                sentences[-1] += " " + piece
                continue
            # "z. B." and "d. h.": the split fell between the two halves
            tail = sentences[-1].lower()[-6:].replace(" ", "")
            if any(tail.endswith(a + ".") for a in ABBREVIATIONS if "." in a):
                sentences[-1] += " " + piece
                continue
        sentences.append(piece)
    return sentences


def description_units(long_lines):
    """The long description as paragraphs, each a list of units: its sentences and list items in
    order (a list item's continuation lines are indented deeper than its bullet)."""
    paragraphs, units, prose, item = [], [], [], None

    def flush_prose():
        if prose:
            units.extend(split_sentences(" ".join(prose)))
            prose.clear()

    def flush_item():
        nonlocal item
        if item:
            units.append(" ".join(item).rstrip(",;"))
        item = None

    for line in long_lines + ["."]:
        if line.strip() == ".":
            flush_prose()
            flush_item()
            if units:
                paragraphs.append(units)
            units = []
            continue
        bullet = BULLET.match(line)
        if bullet:
            flush_prose()
            flush_item()
            item = [bullet.group(1).strip()]
        elif item is not None and line.startswith(" "):
            item.append(line.strip())
        else:
            flush_item()
            prose.append(line.strip())
    return paragraphs


def description_pairs(de_index, en_index):
    """(English, German) pairs of the descriptions translated in de_index: the short descriptions,
    and the units of the long descriptions aligned by position, paragraph by paragraph, where both
    have the same number of paragraphs and that paragraph the same number of units. Returns the pairs
    and the number of translations whose English was missing."""
    pairs, missing = [], 0
    for md5, (short_de, long_de) in de_index.items():
        if md5 not in en_index:
            missing += 1
            continue
        short_en, long_en = en_index[md5]
        pairs.append((short_en, short_de))
        paragraphs_en, paragraphs_de = description_units(long_en), description_units(long_de)
        if len(paragraphs_en) != len(paragraphs_de):
            continue
        for units_en, units_de in zip(paragraphs_en, paragraphs_de):
            if len(units_en) == len(units_de):
                pairs.extend(zip(units_en, units_de))
    return pairs, missing


# --- the Ding dictionary's example sentences -------------------------------------------------------

ANNOTATION = re.compile(r"\{[^}]*\}|\[[^]]*\]|<[^>]*>")
ABBREVIATED_END = re.compile(r"(sb|sth|etw|jd[mns])\.$")
SENTENCE_START = re.compile(r"^[\w\"'\u201e\u201c\u2018]")


def dictionary_pairs(path):
    """(English, German) example sentences of the Ding dictionary (trans-de-en's
    /usr/share/trans/de-en): each line is "German | German ... :: English | English ..." with
    slots that correspond one to one, ';' between alternatives and {...} [...] <...> annotations. A
    slot gives a pair when the first German and the first English alternative are both sentences:
    three or more words, a capital (or digit or quote) first, ending in '.', '!' or '?' and not in an
    abbreviation such as "sb." or "etw."."""
    def clean(s):
        return " ".join(ANNOTATION.sub("", s).split())

    def sentence(s):
        return (len(s.split()) >= 3 and s[-1:] in ".!?" and not ABBREVIATED_END.search(s)
                and SENTENCE_START.match(s) and (s[0].isupper() or not s[0].isalpha()))

    pairs = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("#"):
                    continue
                sides = line.rstrip("\n").split(" :: ")
                if len(sides) != 2:
                    continue
                de_slots, en_slots = sides[0].split(" | "), sides[1].split(" | ")
                if len(de_slots) != len(en_slots):
                    continue
                for de, en in zip(de_slots, en_slots):
                    de, en = clean(de.split(";")[0]), clean(en.split(";")[0])
                    if sentence(de) and sentence(en):
                        pairs.append((en, de))
    except UnicodeDecodeError as e:
        raise CorpusError(f"{path}: not UTF-8 ({e.reason})") from None
    except OSError as e:
        raise CorpusError(f"{path}: cannot read: {e.strerror}") from None
    return pairs


# --- cleaning, de-duplication, splits --------------------------------------------------------------

WORD = re.compile(r"\w+")
MAX_WORDS = 80


def normalize(text):
    return " ".join(unicodedata.normalize("NFC", text).split())


def usable(en, de):
    """A pair worth training on: letters on both sides, not a copy, at most MAX_WORDS words, and
    lengths within a factor 3 (in characters, plus slack for short strings)."""
    if en == de or not re.search(r"[^\W\d_]", en) or not re.search(r"[^\W\d_]", de):
        return False
    if len(en.split()) > MAX_WORDS or len(de.split()) > MAX_WORDS:
        return False
    return len(de) <= 3 * len(en) + 10 and len(en) <= 3 * len(de) + 10


def template_key(en, de):
    """The English words, lowercased, less those the German repeats (names, numbers, identifiers)."""
    de_words = set(WORD.findall(de.lower()))
    return " ".join(w for w in WORD.findall(en.lower()) if w not in de_words)


def build(sources, n_dev, n_test, min_words=3, max_words=50):
    """sources: [(name, [(en, de)])]. Returns ({split: [(en, de, source)]}, {source: {stage: count}})."""
    counts = {}
    seen = set()
    groups = {}  # key -> [(en, de, source)] in input order
    for name, pairs in sources:
        c = counts.setdefault(name, {"pairs": 0, "usable": 0, "new": 0, "copies": 0})
        for en, de in pairs:
            c["pairs"] += 1
            en, de = normalize(en), normalize(de)
            if not usable(en, de):
                continue
            c["usable"] += 1
            if (en, de) in seen:
                continue
            seen.add((en, de))
            c["new"] += 1
            key = template_key(en, de)
            if not key:
                c["copies"] += 1
                continue
            groups.setdefault(key, []).append((en, de, name))

    def rank(key):
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    eligible = sorted((k for k, g in groups.items() if min_words <= len(g[0][0].split()) <= max_words), key=rank)
    if len(eligible) < n_dev + n_test:
        raise CorpusError(f"only {len(eligible)} sentence groups for {n_test} test and {n_dev} dev pairs")
    held = {k: "test" for k in eligible[:n_test]}
    held.update({k: "dev" for k in eligible[n_test:n_test + n_dev]})
    splits = {"train": [], "dev": [], "test": []}
    for key, group in groups.items():
        split = held.get(key)
        if split is None:
            splits["train"].extend(group)
            continue
        splits[split].append(group[0])
        for _, _, name in group[1:]:
            counts[name]["held-out templates"] = counts[name].get("held-out templates", 0) + 1
    for split in ("dev", "test"):  # in hash order: the first lines sample every source
        splits[split].sort(key=lambda row: rank(template_key(row[0], row[1])))
    for split, rows in splits.items():
        for _, _, name in rows:
            counts[name][split] = counts[name].get(split, 0) + 1
    return splits, counts


def write_splits(splits, out):
    """OUT/SPLIT.en, SPLIT.de and SPLIT.origin (the source of each pair: descriptions, catalogs or
    dictionary), each written to a temporary name and renamed."""
    os.makedirs(out, exist_ok=True)
    for split, rows in splits.items():
        for lang, column in (("en", 0), ("de", 1), ("origin", 2)):
            path = os.path.join(out, f"{split}.{lang}")
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.writelines(row[column] + "\n" for row in rows)
            os.replace(path + ".tmp", path)


def print_counts(counts, out=None):
    """The pairs of each source at each stage, as a table."""
    out = out or sys.stdout
    stages = ["pairs", "usable", "new", "copies", "held-out templates", "train", "dev", "test"]
    rows = dict(counts, total={s: sum(c.get(s, 0) for c in counts.values()) for s in stages})
    width = max(len(name) for name in rows)
    print(f"{'source':<{width}}" + "".join(f"  {s:>{max(len(s), 7)}}" for s in stages), file=out)
    for name, row in rows.items():
        print(f"{name:<{width}}" + "".join(f"  {row.get(s, 0):>{max(len(s), 7)},}" for s in stages), file=out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--descriptions", nargs=2, metavar=("TRANSLATION_DE", "TRANSLATION_EN"),
                        help="apt's Translation-de and Translation-en indexes (uncompressed)")
    parser.add_argument("--catalog", nargs="*", default=[], metavar="MO", help="German .mo catalogs")
    parser.add_argument("--dictionary", help="the Ding dictionary (/usr/share/trans/de-en)")
    parser.add_argument("--dev", type=int, default=500, help="dev pairs (default 500)")
    parser.add_argument("--test", type=int, default=2000, help="test pairs (default 2000)")
    args = parser.parse_args(argv)
    try:
        sources = []
        if args.descriptions:
            de_index = read_translation_index(args.descriptions[0], "de")
            en_index = read_translation_index(args.descriptions[1], "en")
            pairs, missing = description_pairs(de_index, en_index)
            if missing:
                print(f"demo-corpus: {missing} of {len(de_index)} German descriptions have no English "
                      f"in {args.descriptions[1]}", file=sys.stderr)
            sources.append(("descriptions", pairs))
        if args.catalog:
            pairs, entries = [], 0
            for path in args.catalog:
                catalog = read_mo(path)
                entries += len(catalog)
                pairs.extend(catalog_pairs(catalog))
            print(f"demo-corpus: {entries:,} entries in {len(args.catalog)} catalogs give {len(pairs):,} lines of text",
                  file=sys.stderr)
            sources.append(("catalogs", pairs))
        if args.dictionary:
            sources.append(("dictionary", dictionary_pairs(args.dictionary)))
        if not sources:
            raise CorpusError("no input: give --descriptions, --catalog and/or --dictionary")
        splits, counts = build(sources, args.dev, args.test)
    except CorpusError as e:
        print(f"demo-corpus: error: {e}", file=sys.stderr)
        return 1
    write_splits(splits, args.out)
    print_counts(counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
