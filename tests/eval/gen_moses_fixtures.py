#!/usr/bin/env python3
"""Generates tests/fixtures/moses/expected.json with the real sacremoses 0.1.1 and sacreBLEU 2.5.1.

tests/eval/test_moses_tokenizer.cpp compares Dragoman's Moses tokenizer and `score-bleu --paper`
against it, so the tests themselves need no Python. Deterministic (fixed seed): re-running writes a
byte-identical file. Run from anywhere:

    pip install sacremoses==0.1.1 sacrebleu==2.5.1 && python3 tests/eval/gen_moses_fixtures.py

Writes one JSON object:
  * "tokenize": cases {lang, aggressive, escape, input, output}, output = " ".join(
    MosesTokenizer(lang).tokenize(input, aggressive_dash_splits=aggressive, escape=escape)):
    every line of the hand-written English, German and French corpora of tests/fixtures/bleu
    (*.ref, *.hyp) in its language; hand-written strings with hyphens, quotes, apostrophes,
    numbers, URLs, e-mail addresses, nonbreaking prefixes, runs of dots, XML characters, control
    characters and Unicode spaces, in every language below; and 120 random strings of such pieces
    per language (en, de, fr, it, cs and "xx", a language sacremoses has no list for: English
    prefixes, neutral apostrophes), a third of them with aggressive dash splitting and a sixth
    without escaping;
  * "compounds": the ##AT## compound splitting, re.sub(r"(\\S)-(\\S)", r"\\1 ##AT##-##AT## \\2", s)
    (Python's re behaves as tensor2tensor's perl -ple on these strings), on tokenized strings;
  * "paper_bleu": the paper's BLEU of tests/fixtures/bleu/{en,de,fr}.hyp against .ref: each line
    Moses-tokenized in the file's language, compounds split (or not, or after aggressive dash
    splitting), then sacrebleu.corpus_bleu(tokenize="none", smooth_method="none"): score, counts,
    totals, sys_len, ref_len at full precision. The same with sacreBLEU's default smoothing is
    asserted equal (no n-gram order without a match);
  * "get_ende_bleu": tensor2tensor's get_ende_bleu.sh re-implemented step for step on
    tests/fixtures/bleu/{t2t,de}.hyp against .ref (quotes, dashes, compounds, fullwidth
    punctuation): Moses' replace-unicode-punctuation.perl as that script runs it (Perl without
    utf8 layers, so byte-wise substitutions on UTF-8; ported below on bytes, not sacremoses'
    version, which differs: \s* for " *" and "1" for the script's '"' from fullwidth 1), then „
    as " (the quote-normalised reference of tensor2tensor issue 317, on both sides), then
    tokenizer.perl -l de (sacremoses, escaping), then perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g',
    then multi-bleu.perl (sacreBLEU with tokenize="none", smooth_method="none").
"""
import json
import os
import random
import re

import sacrebleu
from sacremoses import MosesTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
BLEU_DIR = os.path.join(HERE, "..", "fixtures", "bleu")
OUT = os.path.join(HERE, "..", "fixtures", "moses", "expected.json")

TRICKY = [
    "rich-text format, state-of-the-art, e-mail and x--y -- a - b - c",
    "Er sagte: \"Das ist 'gut'.\" Sie antwortete: „Nein“ und ‚vielleicht‘.",
    "« Bonjour », dit-il. L'homme qu'on voit aujourd'hui n'est pas là.",
    "I can't believe it's John's dog; they'll say we've won 'cause the '90s were great.",
    "The price rose from $5,300.50 to €1.234,56 (about 12,5 %) in 2023.",
    "See http://www.example.com/path/to-page.html?x=1&y=2 or write to foo.bar@example.org.",
    "Mr. Smith met Dr. Jones at 5 p.m. on Jan. 3, e.g. in the U.S. No. 5 and No 5 and No. five.",
    "z.B. Nr. 3, S. 45, usw. Prof. Dr. Müller kam am 3. Oktober.",
    "M. Dupont et Mme. Durand, p. ex. à 18 h 30, etc. C'est fini.",
    "Wait... what?! Really.... OK.. fine. .hidden .. ... ....",
    "<b>bold</b> & [brackets] | pipes {braces} @user #tag 50% a/b c\\d",
    "Tab\there, no-break\u00a0space, thin\u2009space, ideographic\u3000space, control\x01chars\x1f.",
    "He said 'yes.' She said \"no.\"' It ends with a dot and quote.'",
    "1,000,000 and 3,5 and a,b,c and 7, 8 ,9 and end with 42,",
    "'Tis the season; 'twas the night. Gimme gonna wanna cannot.",
    "ÄÖÜ äöü ß Straße – Gedankenstrich — Geviertstrich … Auslassung",
    "Ç'a été l'œuvre d'une vie : « J'y vais », s'écria-t-il.",
    "  leading and trailing spaces   ",
    "",
    "-",
    "'",
    ".",
    "a.",
    "A.B.C. and a.b.c. and U.S.A.",
]
PIECES = list("abcXYZ019 .,'`-\"&|<>[](){}!?;:@#$%/\\") + [
    "...", "..", "Mr.", "Dr.", "No.", "z.B.", "Nr.", "St.", "etc.", "p.", "pp.", "Art.", "l'", "qu'",
    "n't", "'s", "'ll", "--", "\t", "\u00a0", "\u2009", "\x01", "\x1f", "ä", "ß", "É", "é", "€", "£",
    "½", "²", "٣", "中", "한", "ö", "ç", "«", "»", "„", "“", "”", "’", "‚", "…", "–", "—", "\u0301",
    "ǅ", "ა", "http://www.example.com/a-b/c.html", "foo@bar.com", "5,300", "1.000,50", "3.", "Jan.",
    "Abs.", "II.", "e.g.", "U.S.", "a-b-c", "x--y", "''", " ' ", ".'", "?'", "DOTMULTI", "DOTDOTMULTI",
]
LANGS = ["en", "de", "fr", "it", "cs", "xx"]


def tokenize(tokenizers, lang, text, aggressive=False, escape=True):
    if lang not in tokenizers:
        tokenizers[lang] = MosesTokenizer(lang)
    return " ".join(tokenizers[lang].tokenize(text, aggressive_dash_splits=aggressive, escape=escape))


def split_compounds(text):
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", text)


# Moses' scripts/tokenizer/replace-unicode-punctuation.perl, its substitutions in its order, on
# bytes as the script (no utf8 layer) applies them.
REPLACE_UNICODE_PUNCTUATION = [
    ("，", ","), ("。 *", ". "), ("、", ","), ("”", '"'), ("“", '"'), ("∶", ":"), ("：", ":"), ("？", "?"),
    ("《", '"'), ("》", '"'), ("）", ")"), ("！", "!"), ("（", "("), ("；", ";"), ("１", '"'), ("」", '"'),
    ("「", '"'), ("０", "0"), ("３", "3"), ("２", "2"), ("５", "5"), ("６", "6"), ("９", "9"), ("７", "7"),
    ("８", "8"), ("４", "4"), ("． *", ". "), ("～", "~"), ("’", "'"), ("…", "..."), ("━", "-"), ("〈", "<"),
    ("〉", ">"), ("【", "["), ("】", "]"), ("％", "%"),
]


def replace_unicode_punctuation(line):
    data = line.encode("utf-8")
    for pattern, substitution in REPLACE_UNICODE_PUNCTUATION:  # no regex characters but " *"
        data = re.sub(pattern.encode("utf-8"), substitution.encode("utf-8"), data)
    return data.decode("utf-8")


def lines(name):
    with open(os.path.join(BLEU_DIR, name), encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def main():
    rng = random.Random(20261126)
    toks = {}
    cases = []

    def add(lang, text, aggressive=False, escape=True):
        cases.append({"lang": lang, "aggressive": aggressive, "escape": escape, "input": text,
                      "output": tokenize(toks, lang, text, aggressive, escape)})

    for lang in ["en", "de", "fr"]:
        for name in [lang + ".ref", lang + ".hyp"]:
            for line in lines(name):
                add(lang, line)
    for lang in LANGS:
        for text in TRICKY:
            add(lang, text)
            add(lang, text, aggressive=True)
        add(lang, TRICKY[4], escape=False)
        for _ in range(120):
            n = rng.randint(1, 25)
            text = "".join(rng.choice(PIECES) + rng.choice(["", " ", " ", "  "]) for _ in range(n))
            add(lang, text, aggressive=rng.random() < 1 / 3, escape=rng.random() >= 1 / 6)

    compounds = []
    for text in ["rich-text format", "a-b-c", "x--y", "- a -b c- -", "state-of-the-art", "e-mail@a-b.com",
                 "Haus-Boot ##AT##-##AT## z", "a @-@ b"]:
        compounds.append({"input": text, "output": split_compounds(text)})

    paper = []
    for lang in ["en", "de", "fr"]:
        for compounds_split, aggressive in [(True, False), (False, False), (True, True)]:
            def prep(name):
                out = [tokenize(toks, lang, line, aggressive) for line in lines(name)]
                return [split_compounds(s) for s in out] if compounds_split else out

            hyp, ref = prep(lang + ".hyp"), prep(lang + ".ref")
            b = sacrebleu.corpus_bleu(hyp, [ref], tokenize="none", smooth_method="none")
            assert b.score == sacrebleu.corpus_bleu(hyp, [ref], tokenize="none").score
            paper.append({"lang": lang, "hyp": lang + ".hyp", "ref": lang + ".ref",
                          "split_compounds": compounds_split, "aggressive": aggressive, "score": b.score,
                          "counts": b.counts, "totals": b.totals, "sys_len": b.sys_len, "ref_len": b.ref_len})

    ende = []
    for name in ["t2t", "de"]:
        def t2t(file):
            return [split_compounds(tokenize(toks, "de", replace_unicode_punctuation(line).replace("„", '"')))
                    for line in lines(file)]

        hyp, ref = t2t(name + ".hyp"), t2t(name + ".ref")
        b = sacrebleu.corpus_bleu(hyp, [ref], tokenize="none", smooth_method="none")
        ende.append({"hyp": name + ".hyp", "ref": name + ".ref", "score": b.score, "counts": b.counts,
                     "totals": b.totals, "sys_len": b.sys_len, "ref_len": b.ref_len,
                     "normalized_hyp": [replace_unicode_punctuation(line).replace("„", '"')
                                        for line in lines(name + ".hyp")]})

    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"sacremoses": "0.1.1", "sacrebleu": sacrebleu.__version__, "tokenize": cases,
                   "compounds": compounds, "paper_bleu": paper, "get_ende_bleu": ende}, f, ensure_ascii=False, indent=1)
        f.write("\n")


main()
