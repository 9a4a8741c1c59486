#!/usr/bin/env python3
"""Generates the BLEU/chrF fixtures in tests/fixtures/bleu/ with the real sacreBLEU 2.5.1.

The C++ tests (tests/eval/test_bleu.cpp, test_chrf.cpp, test_tokenizers.cpp,
tests/text/test_unicode.cpp) compare Dragoman's score-bleu against these files, so the tests
themselves need no Python. Deterministic (fixed seed, no parallelism in what is written):
re-running writes byte-identical files. Run from anywhere (paths are relative to this file):

    pip install sacrebleu==2.5.1 && python3 tests/eval/gen_bleu_fixtures.py

The committed files were made with Python 3.11 (Unicode 14.0 for str.lower/str.split) and the
`regex` package 2026.5.9 (sacreBLEU's intl tokenizer; its own Unicode tables). Only code points
assigned in Unicode 14.0 are used, so newer versions should give the same files. Takes a few
minutes (about 400 runs of the sacreBLEU CLI).

Writes:
  * the text corpora (*.hyp, *.ref, *.ref2): hand-written German, French, Chinese and English
    sentences and a 3000-line random corpus; hypotheses (and second references) are noisy copies
    of the references (words dropped, replaced, swapped, re-cased, re-spaced); crlf.* has Windows
    line ends; nomatch/short/sparse.hyp are hypotheses against en.ref with no match, a brevity
    penalty, and no 3- or 4-gram match;
  * expected.json: a list of cases, each a sacreBLEU CLI run (`python3 -m sacrebleu REFS -i HYP
    ARGS`, whose exact printed lines are kept: "text" with -w 2, "text_width4" with -w 4, "json"
    with -f json -w 2, "sentence_text" the first 5 lines with --sentence-level -w 2) and the same
    options through the Python API for full-precision numbers ("corpus": score and, for BLEU,
    counts, totals, precisions, bp, sys_len, ref_len; "sentence": sentence_score() of the first
    200 lines, with effective_order=True for BLEU, as the CLI's --sentence-level does). The
    script asserts that the API's numbers, formatted as sacreBLEU formats them, are what the CLI
    printed;
  * tokenize.json: each tokenizer's output ("13a", "intl", "zh", "char", "none") on tricky
    strings, called directly, and Python's str.lower() ("lower") and str.split() ("split").
"""
import concurrent.futures
import json
import os
import random
import re
import subprocess
import sys
import unicodedata

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_char import TokenizerChar
from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International
from sacrebleu.tokenizers.tokenizer_none import NoneTokenizer
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "bleu")
assert sacrebleu.__version__ == "2.5.1", f"needs sacrebleu 2.5.1, found {sacrebleu.__version__}"

DE = [
    "Das Wetter ist heute schön, aber morgen soll es regnen.",
    "Die Straße wurde für 3-4 Wochen gesperrt.",
    "Er hat 1.234,56 € für die Reparatur bezahlt.",
    "„Kommst du heute Abend?“, fragte sie.",
    "",  # empty in every file
    "Am 3. Oktober 1990 wurde Deutschland wiedervereinigt.",
    "Die Bundesausbildungsförderungsgesetznovelle tritt im Mai in Kraft.",
    "Wir treffen uns um 18:30 Uhr am Hauptbahnhof.",
    "Der Preis stieg um 12,5 % auf 99,99 Euro.",
    "Ich weiß nicht, ob er kommt – vielleicht später.",
    "Die Übersetzung ist gut; die Grammatik jedoch nicht.",
    "Größe und Gewicht: 1,80 m / 75 kg.",
    "Bitte rufen Sie uns unter 030/123456 an!",
    "Das Buch (erschienen 2015) ist ausverkauft.",
    "Sie sagte: „Das ist nicht mein Problem.“",
    "Äpfel, Birnen und Öl kosten zusammen 7,20 €.",
    "Warum ist die Banane krumm?",
    "Die Firma beschäftigt rund 15.000 Mitarbeiter weltweit.",
    "Er las den Artikel – und schwieg.",
    "Im Jahr 2023 stiegen die Preise um durchschnittlich 5,9 Prozent.",
    "Die Katze schläft auf dem Sofa.",
    "Das Spiel endete 2:1 für die Gastgeber.",
    "Können Sie mir bitte den Weg zum Bahnhof zeigen?",
    "Der Zug hat 20 Minuten Verspätung.",
    "Die Sitzung wurde auf den 15.06. verschoben.",
    "Das Ergebnis war überraschend – niemand hatte damit gerechnet.",
    "Die E-Mail-Adresse lautet info@beispiel.de.",
    "Wir haben keine Zeit, keine Lust und kein Geld.",
    "Der Fluss ist 1.232 km lang.",
    "Die Kinder spielen im Garten, während die Eltern kochen.",
    "Nach dem Essen gingen wir spazieren.",
    "Es ist nicht alles Gold, was glänzt.",
    "Der Vertrag gilt ab dem 1. Januar.",
    "Die Temperatur fiel auf −5 °C.",
    "Sie hat das Studium mit Auszeichnung abgeschlossen.",
    "Ich hätte gern ein Glas Wasser, bitte.",
    "Das Museum öffnet um 10 Uhr und schließt um 18 Uhr.",
    "Er ist 1,5 Jahre älter als sein Bruder.",
    "Die Straßenbahn fährt alle 7–8 Minuten.",
    "Die Regierung plant neue Maßnahmen gegen die Inflation.",
    "Wer nicht wagt, der nicht gewinnt!",
    "Die Ergebnisse (siehe Tabelle 3) sind eindeutig.",
    "Der Hund bellte, die Katze fauchte.",
    "Wie spät ist es?",
    "Das Projekt kostet 2,3 Mio. Euro.",
    "Sie wohnt in der Goethestraße 12a.",
    "Im Winter fahren wir Ski, im Sommer wandern wir.",
    "Die Antwort lautet: Nein.",
    "Das war's für heute.",
    "Morgen früh um 6 Uhr geht's los.",
    "Der Bericht umfasst 250 Seiten.",
    "Die Brücke wurde 1889 gebaut.",
    "Sind Sie sicher?",
    "Die Idee ist gut, aber die Umsetzung schwierig.",
    "Er trinkt keinen Kaffee, nur Tee.",
    "Das Fenster ist offen.",
    "Zwei Drittel der Befragten stimmten zu.",
    "Die Straße ist nass und glatt.",
    "Am Ende gewann die bessere Mannschaft.",
    "Öffnungszeiten: Mo.–Fr. 9–17 Uhr, Sa. 10–14 Uhr.",
    "Er wurde am 24.12.1999 in Köln geboren.",
    "Laut § 3 Abs. 2 ist das nicht erlaubt.",
    "Das Haus kostet 1.234.567,89 € – inklusive Grundstück.",
    "‚Einfache‘ Anführungszeichen gibt es auch.",
    "Die Wahlbeteiligung lag bei 76,6 % (2021) bzw. 70,2 % (2017).",
]

FR = [
    "Il fait beau aujourd'hui, mais demain il pleuvra.",
    "« Tu viens ce soir ? » demanda-t-elle.",
    "Le prix a augmenté de 12,5 % en 2023.",
    "L'Assemblée nationale a adopté la loi le 3 mars.",
    "Qu'est-ce que c'est ?",
    "Il a payé 1 234,56 € pour la réparation.",
    "Nous nous retrouvons à 18 h 30 à la gare.",
    "Attention : la route est fermée !",
    "C'est l'été ; les enfants jouent dehors.",
    "Il hésita… puis il partit.",
    "Le français est parlé dans de nombreux pays.",
    "J'ai mangé une pomme, une poire et une banane.",
    "Où est la bibliothèque ?",
    "Elle a dit : « Ce n'est pas mon problème. »",
    "Les résultats (voir le tableau 3) sont clairs.",
    "Le train a vingt minutes de retard.",
    "Aujourd'hui, c'est lundi.",
    "Il est né le 1er janvier 1990 à Lyon.",
    "La température est tombée à −5 °C.",
    "Je voudrais un verre d'eau, s'il vous plaît.",
    "Le musée ouvre à 10 h et ferme à 18 h.",
    "Qui ne risque rien n'a rien !",
    "Le rapport compte 250 pages.",
    "Elle habite au 12, rue Victor-Hugo.",
    "Le chat dort sur le canapé.",
    "Pourquoi pas ?",
    "La réunion est reportée au 15 juin.",
    "Les enfants jouent au jardin pendant que les parents cuisinent.",
    "C'était une idée géniale… mais irréalisable.",
    "Deux tiers des personnes interrogées étaient d'accord.",
    "Le pont a été construit en 1889.",
    "Êtes-vous sûr ?",
    "Il ne boit pas de café, seulement du thé.",
    "La fenêtre est ouverte.",
    "À la fin, la meilleure équipe a gagné.",
    "L'hôtel coûte 89 € la nuit.",
    "Ça va ? Oui, très bien, merci.",
    "Le projet coûte 2,3 millions d'euros.",
    "Il a lu l'article – et s'est tu.",
    "Nous n'avons ni le temps ni l'argent.",
    "Le fleuve mesure 1 012 km de long.",
    "La réponse est : non.",
    "C'est tout pour aujourd'hui.",
    "Demain matin à 6 h, on part.",
    "La pluie tombe depuis ce matin.",
    "Il est 1,5 an plus âgé que son frère.",
    "Le gouvernement prévoit de nouvelles mesures.",
    "Le match s'est terminé 2-1.",
    "Voici la liste : pommes, poires… et cætera !",
    "L’apostrophe typographique n’est pas l'apostrophe droite.",
    "« Oui ! » ; « Non ? » ; « Peut-être… »",
]

ZH = [
    "今天天气很好，但是明天会下雨。",
    "我在2023年去了北京。",
    "他花了1,234.56元修车。",
    "“你今晚来吗？”她问。",
    "这本书（2015年出版）已经卖完了。",
    "会议推迟到6月15日。",
    "价格上涨了12.5%。",
    "我喜欢学习NLP和machine translation。",
    "火车晚点了20分钟。",
    "请打电话给我们：010-12345678！",
    "他想了想……然后走了。",
    "结果——出乎所有人的意料。",
    "这家公司在全球有约15,000名员工。",
    "苹果、梨和香蕉一共7.20欧元€。",
    "为什么香蕉是弯的？",
    "博物馆上午10点开门，下午6点关门。",
    "我要一杯水，谢谢。",
    "桥建于1889年。",
    "你确定吗？",
    "猫在沙发上睡觉。",
    "孩子们在花园里玩，父母在做饭。",
    "答案是：不。",
    "这个项目花费230万欧元。",
    "温度降到了零下5°C。",
    "他的邮箱是info@example.com。",
    "比赛以2:1结束。",
    "他不喝咖啡，只喝茶。",
    "窗户开着。",
    "最后，更好的队伍赢了。",
    "三分之二的受访者表示同意。",
    "我用iPhone 15拍了这张照片。",
    "Python 3.11比3.10快。",
    "今天是星期一。",
    "报告共有250页。",
    "路又湿又滑。",
    "一分耕耘，一分收获。",
    "他比他哥哥大1.5岁。",
    "明天早上6点出发。",
    "政府计划采取新措施。",
    "这是今天的全部内容。",
    "气温是25℃，湿度是60‰。",
    "第①步：打开《用户手册》。",
    "她说：「我们走吧～」",
    "这个字“𠮷”不在基本区，abc𠮷def也一样。",
    "我喜欢ポケモン和のりまき。",
    "ＡＢＣ公司的股价上涨了３．５％。",
    "价格从€100→€120，涨幅20%。",
    "李·华是Ⅲ班的学生★。",
    "ｶﾀｶﾅ是半角片假名。",
    "第一章\u3000总则（GDPR第3条）",
]

EN = [
    "The weather is nice today, but it will rain tomorrow.",
    "Tom &amp; Jerry is a cartoon.",
    "She said &quot;hello&quot; and left.",
    "If x &lt; 5 and y &gt; 3, return true.",
    "The tag &amp;lt;b&amp;gt; is escaped twice.",
    "This part was <skipped> removed.",
    "Visit https://www.example.com/path?a=1&b=2 for details.",
    "Write to info@example.com or call +1 (555) 123-4567.",
    "The U.S.A. has 50 states, e.g., Texas.",
    "It costs $1,234.56 -- or about €1.100,00.",
    "Pages 3-4, 10-12 and 15- are missing.",
    "He scored 3.14 on the test; she scored .5 more.",
    "Numbers: 1,000 2.5 -5 5. 10,000,000",
    "The  meeting\tstarts at 10:30 a.m.   ",
    "Unicode spaces:\u2003em\u3000ideographic\u00a0nbsp\u202fnarrow.",
    "Emoji are fine 😀 👍🏽 🇩🇪.",
    "İstanbul is in TÜRKİYE.",
    "ΣΑΣ ΟΔΥΣΣΕΥΣ and Σ alone.",
    "STRASSE vs STRAẞE and ǄEMAL.",
    "Don't stop -- won't stop!",
    "(Parenthetical) remarks [in brackets] {and braces}.",
    "Quotes: \"double\", 'single', `back`, ‘curly’ and “curly”.",
    "A/B testing, 50/50 split, and/or.",
    "Use the #hashtag and @mention.",
    "100% of 5^2 = 25; ~3 * 4 + 1 = 13.",
    "The year 2017.",
    "Version 1.2.3 was released on 2023-10-05.",
    "a..b a,,b a.,b 1.2.3 3-4-5 x- -x",
    "U.K., U.S., and E.U. officials met.",
    "It's a dog-eat-dog world out there.",
    "The price went from $5 to $7.50 (a 50% rise).",
    "He said... nothing.",
    "I have 2 cats, 1 dog, and 0 fish.",
    "Call me at 9 p.m.",
    "Section 3.2.1: Results.",
    "The temperature was -5°C at 6:00.",
    "Mr. Smith vs. Mrs. Jones",
    "Ellipsis… and em—dash and en–dash.",
    "Copyright © 2024, Trademark™ and Registered®.",
    "Fractions ½ ¼ and superscripts x² y³.",
    "Roman numerals Ⅻ and Ⅳ.",
    "FULL-WIDTH ＡＢＣ and half-width abc.",
    "Tabs\there\tand\tthere.",
    "Trailing spaces and tabs at the end. \t ",
    "Next line\u0085char inside.",
    "Is this OK?! Yes!!",
    "Brackets<inside>angles",
    "The end.",
    "Good morning, everyone.",
    "She reads two books a week.",
    "We met in Paris in 1999.",
    "The report has 250 pages.",
    "Please close the door.",
    "Why not?",
    "Everything is fine.",
    "The cat sat on the mat.",
    "Life is what happens while you are busy making other plans.",
    "Prices rose 5.9 percent in 2023.",
    "He left at 8:15 and arrived at 9:45.",
    "That's all for today.",
    "Double-escaped: &amp;quot;q&amp;quot; &amp;amp; &lt;skipped&gt; stays.",
    "Trailing Unicode spaces are stripped too.\u00a0\u3000",
    "   Leading spaces stay for chrF.",
    "Titlecase ǅ, ǈ and ǋ; Kelvin \u212a and Ohm \u2126.",
    "Zero\u200bwidth space and bom\ufeffinside are not whitespace.",
    "Arabic-Indic ١٢٣.٤ and full-width １２３.５ digits.",
    "x<skipped>y and <SKIPPED> and <skip<skipped>ped>.",
]


def perturb(rng, line, vocab):
    """A noisy copy of a line: words dropped, replaced, swapped, re-cased, re-spaced."""
    words = line.split(" ")
    out = []
    for w in words:
        r = rng.random()
        if r < 0.08:
            continue
        if r < 0.16:
            out.append(rng.choice(vocab))
        elif r < 0.20:
            out.append(w.upper())
        elif r < 0.24:
            out.append(w.lower())
        else:
            out.append(w)
    if len(out) > 3 and rng.random() < 0.4:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    text = " ".join(out)
    r = rng.random()
    if r < 0.15:  # detached punctuation, as a tokenized output would have it
        text = text.replace(",", " ,").replace(".", " .")
    elif r < 0.25:  # punctuation glued to the word before it
        for p in " ;", " :", " !", " ?", "\u00a0", "\u202f":
            text = text.replace(p, p.strip() if p.strip() else "")
    elif r < 0.35:  # non-breaking spaces become plain ones
        text = text.replace("\u00a0", " ").replace("\u202f", " ")
    if rng.random() < 0.1:
        text = text[: len(text) // 2]
    return text


def french_spacing(line, style):
    """French typography: style 0 plain spaces, 1 U+00A0 everywhere, 2 U+202F before ; ! ? and
    inside « », U+00A0 before :. Thousands separators get the same treatment."""
    if style == 0:
        return line
    thin = "\u00a0" if style == 1 else "\u202f"
    line = re.sub(r"(\d) (\d{3})", lambda m: m.group(1) + thin + m.group(2), line)
    line = re.sub(r" ([;!?»])", lambda m: thin + m.group(1), line)
    line = line.replace("« ", "«" + thin).replace(" :", "\u00a0:")
    return line


def write_lines(name, lines, newline="\n", final_newline=True):
    with open(os.path.join(OUT, name), "w", encoding="utf-8", newline="") as f:
        f.write(newline.join(lines) + (newline if final_newline else ""))


def vocab_of(lines):
    return sorted({w for line in lines for w in line.split() if w})


def make_corpora():
    rng = random.Random(20261122)
    # German: two references; empty lines in the hypothesis (2, 17, 30), in the second reference
    # (3, 22, 30), and in all three files (4, from the DE list). Lines 2-4 are among the first five,
    # whose sentence-level lines the fixtures keep.
    de_vocab = vocab_of(DE)
    de_ref = list(DE)
    de_ref2 = [perturb(rng, line, de_vocab) if line else "" for line in DE]
    de_hyp = [perturb(rng, line, de_vocab) if line else "" for line in DE]
    for i in (2, 17, 30):
        de_hyp[i] = ""
    for i in (3, 22, 30):
        de_ref2[i] = ""
    write_lines("de.ref", de_ref)
    write_lines("de.ref2", de_ref2)
    write_lines("de.hyp", de_hyp)

    fr = [french_spacing(line, i % 3) for i, line in enumerate(FR)]
    write_lines("fr.ref", fr)
    write_lines("fr.hyp", [perturb(rng, line, vocab_of(fr)) for line in fr])

    # Chinese has no spaces to perturb on: drop and swap characters, use ASCII punctuation.
    zh_hyp = []
    for line in ZH:
        chars = list(line)
        out = [c for c in chars if rng.random() > 0.1]
        if len(out) > 4 and rng.random() < 0.5:
            i = rng.randrange(len(out) - 1)
            out[i], out[i + 1] = out[i + 1], out[i]
        text = "".join(out)
        r = rng.random()
        if r < 0.15:
            text = text.replace("，", ",").replace("。", ".").replace("：", ": ")
        elif r < 0.35:
            text = text.lower()
        zh_hyp.append(text)
    write_lines("zh.ref", ZH)
    write_lines("zh.hyp", zh_hyp)

    en_hyp = [perturb(rng, line, vocab_of(EN)) for line in EN]
    en_hyp[3] = " \t\u3000"  # only whitespace: empty once the line is rstripped
    write_lines("en.ref", EN)
    write_lines("en.hyp", en_hyp)

    # A large random corpus: words, numbers, ASCII and Unicode punctuation and symbols, entities,
    # tokens with tricky dots, separated mostly by spaces, sometimes by nothing, tabs or
    # Unicode spaces.
    words = vocab_of(DE + FR + EN)[:400]
    punct = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + list("¿¡·•‰€£°±×÷‐–—‘’“”«»‹›⁄™©®¶§")
    numbers = ["1,000", "3.14", "2-3", "-5", ".5", "5.", "10", "1.000,5", "42", "2017.", "3-4-5",
               "1.2.3", "٣٤", "１２", "½", "x²"]
    specials = ["&amp;", "&quot;", "&lt;", "&gt;", "&amp;lt;", "<skipped>", "U.S.", "e.g.,", "...",
                "--", "'s", "n't", "İ", "ΣΑΣ", "ẞ", "ǅ", "我们", "😀", "a..b", "a,,b"]
    separators = [" "] * 85 + [""] * 8 + ["\t", "\t", "\u00a0", "\u00a0", "  ", "  ", "\u3000"]
    ref, ref2, hyp = [], [], []
    for _ in range(3000):
        tokens = []
        for _ in range(rng.randint(0, 25)):
            r = rng.random()
            if r < 0.14:
                tokens.append(rng.choice(punct))
            elif r < 0.24:
                tokens.append(rng.choice(numbers))
            elif r < 0.27:
                tokens.append(rng.choice(specials))
            elif r < 0.31:
                tokens.append(rng.choice(punct) + rng.choice(words))
            elif r < 0.36:
                tokens.append(rng.choice(words) + rng.choice(punct))
            else:
                tokens.append(rng.choice(words))
        line = "".join(t + rng.choice(separators) for t in tokens).strip()
        ref.append(line)
        ref2.append(perturb(rng, line, words))
        hyp.append(perturb(rng, line, words))
    write_lines("random.ref", ref)
    write_lines("random.ref2", ref2)
    write_lines("random.hyp", hyp)

    # Windows line ends; the hypothesis has no line end after its last line.
    write_lines("crlf.ref", EN[:8], newline="\r\n")
    write_lines("crlf.hyp", [perturb(rng, line, vocab_of(EN)) for line in EN[:8]], newline="\r\n",
                final_newline=False)

    # A hypothesis with no match at all, a short one (brevity penalty), and a sparse one: pairs of
    # reference tokens between filler words, so that no 3- or 4-gram matches and the smoothing
    # methods give different corpus scores.
    write_lines("nomatch.hyp", ["zzz qqq"] * len(EN))
    write_lines("short.hyp", [" ".join(line.split()[:3]) for line in EN])
    sparse = []
    tok13a = Tokenizer13a()
    for line in EN:
        tokens = tok13a(line.rstrip()).split()
        groups = [" ".join(tokens[i:i + 2]) for i in range(0, len(tokens), 3)]
        sparse.append(" qzx ".join(groups))
    write_lines("sparse.hyp", sparse)


def read_lines(name):
    # As the sacreBLEU CLI reads files: split on '\n' only, then rstrip().
    with open(os.path.join(OUT, name), encoding="utf-8", newline="\n") as f:
        return [line.rstrip() for line in f]


def cli_outputs(refs, hyp, args):
    """Runs `python3 -m sacrebleu REFS -i HYP ARGS` four ways, in parallel: the corpus line at widths 2
    and 4, the JSON, and the sentence-level lines (the first 5 kept)."""
    env = dict(os.environ, NO_COLOR="1")
    env.pop("SACREBLEU_FORMAT", None)  # it would override -f
    base = [sys.executable, "-m", "sacrebleu"] + [os.path.join(OUT, r) for r in refs]
    base += ["-i", os.path.join(OUT, hyp)] + args
    variants = [["-f", "text", "-w", "2"], ["-f", "text", "-w", "4"], ["-f", "json", "-w", "2"],
                ["-f", "text", "-w", "2", "--sentence-level"]]
    procs = [subprocess.Popen(base + v, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for v in variants]
    outs = []
    for p in procs:
        out, err = p.communicate()
        assert p.returncode == 0, (base, err.decode("utf-8", "replace"))
        outs.append(out.decode("utf-8"))
    text, text4, js, sentence = outs
    return text.rstrip("\n"), text4.rstrip("\n"), json.loads(js), sentence.splitlines()[:5]


DEFAULT_OPTIONS = {"tokenize": "13a", "lowercase": False, "smooth_method": "exp", "smooth_value": None,
                   "char_order": 6, "word_order": 0, "beta": 2, "whitespace": False, "eps_smoothing": False}
SENTENCES = 200  # sentence-level scores kept per case (the random corpus has 3000 lines)


def check_cli(name, score, sig, text, text4, js, sentence_text, sentence_scores, sentence_sigs):
    """The API's numbers, formatted as sacreBLEU formats them, are what the CLI printed."""
    assert text == score.format(2, False, sig), (name, text, score.format(2, False, sig))
    assert text4 == score.format(4, False, sig), (name, text4)
    assert js["score"] == float(f"{score.score:.2f}"), (name, js)
    assert len(sentence_text) == min(5, len(sentence_scores)), name
    for line, s, ssig in zip(sentence_text, sentence_scores, sentence_sigs):
        assert line == s.format(2, False, ssig), (name, line, s.format(2, False, ssig))


def run_case(name, hyp, refs, args, metric, sentence_metric):
    """One case: the sacreBLEU CLI (in the pool) and the API on the same files, cross-checked.

    Returns the corpus score, the CLI's text at widths 2 and 4, its JSON, its first sentence-level
    lines, and the API's sentence scores of the first SENTENCES lines."""
    future = POOL.submit(cli_outputs, refs, hyp, args)
    hyps = read_lines(hyp)
    ref_streams = [read_lines(r) for r in refs]
    score = metric.corpus_score(hyps, ref_streams)
    sentence_scores, sentence_sigs = [], []
    for i, h in enumerate(hyps[:SENTENCES]):
        sentence_scores.append(sentence_metric.sentence_score(h, [s[i] for s in ref_streams]))
        sentence_sigs.append(sentence_metric.get_signature().format())
    text, text4, js, sentence_text = future.result()
    check_cli(name, score, metric.get_signature().format(), text, text4, js, sentence_text,
              sentence_scores, sentence_sigs)
    return score, text, text4, js, sentence_text, sentence_scores


def bleu_case(name, hyp, refs, tokenize="13a", lowercase=False, smooth="exp", smooth_value=None):
    args = ["-m", "bleu", "--tokenize", tokenize, "--smooth-method", smooth]
    if lowercase:
        args.append("--lowercase")
    if smooth_value is not None:
        args += ["--smooth-value", str(smooth_value)]
    options = dict(tokenize=tokenize, lowercase=lowercase, smooth_method=smooth, smooth_value=smooth_value)
    score, text, text4, js, sentence_text, sentence_scores = run_case(
        name, hyp, refs, args, BLEU(**options), BLEU(**options, effective_order=True))
    return {
        "name": name, "metric": "bleu", "hyp": hyp, "refs": refs, "args": args,
        "options": dict(DEFAULT_OPTIONS, **options),
        "corpus": {
            "score": score.score, "counts": [float(c) for c in score.counts],
            "totals": [float(t) for t in score.totals], "precisions": score.precisions,
            "bp": score.bp, "sys_len": score.sys_len, "ref_len": score.ref_len,
            "text": text, "text_width4": text4, "json": js,
        },
        "sentence": [s.score for s in sentence_scores],
        "sentence_text": sentence_text,
    }


def chrf_case(name, hyp, refs, char_order=6, word_order=0, beta=2, lowercase=False, whitespace=False,
              eps_smoothing=False):
    args = ["-m", "chrf", "--chrf-char-order", str(char_order), "--chrf-word-order", str(word_order),
            "--chrf-beta", str(beta)]
    if lowercase:
        args.append("--chrf-lowercase")
    if whitespace:
        args.append("--chrf-whitespace")
    if eps_smoothing:
        args.append("--chrf-eps-smoothing")
    options = dict(char_order=char_order, word_order=word_order, beta=beta, lowercase=lowercase,
                   whitespace=whitespace, eps_smoothing=eps_smoothing)
    score, text, text4, js, sentence_text, sentence_scores = run_case(
        name, hyp, refs, args, CHRF(**options), CHRF(**options))
    return {
        "name": name, "metric": "chrf", "hyp": hyp, "refs": refs, "args": args,
        "options": dict(DEFAULT_OPTIONS, **options),
        "corpus": {"score": score.score, "text": text, "text_width4": text4, "json": js},
        "sentence": [s.score for s in sentence_scores],
        "sentence_text": sentence_text,
    }


def make_expected():
    cases = []
    bleu = lambda *a, **k: cases.append(bleu_case(*a, **k))
    chrf = lambda *a, **k: cases.append(chrf_case(*a, **k))
    for tok in ["13a", "intl", "zh", "char", "none"]:
        for corpus in ["random", "en"]:
            bleu(f"{corpus}_{tok}", f"{corpus}.hyp", [f"{corpus}.ref"], tokenize=tok)
    bleu("random_13a_two_refs", "random.hyp", ["random.ref", "random.ref2"])
    bleu("random_intl_two_refs_lc", "random.hyp", ["random.ref", "random.ref2"], tokenize="intl", lowercase=True)
    bleu("random_zh_two_refs", "random.hyp", ["random.ref", "random.ref2"], tokenize="zh")
    bleu("random_char_two_refs_lc", "random.hyp", ["random.ref", "random.ref2"], tokenize="char", lowercase=True)
    bleu("de_13a", "de.hyp", ["de.ref"])
    bleu("de_13a_two_refs", "de.hyp", ["de.ref", "de.ref2"])
    bleu("de_intl_two_refs", "de.hyp", ["de.ref", "de.ref2"], tokenize="intl")
    bleu("de_zh_two_refs", "de.hyp", ["de.ref", "de.ref2"], tokenize="zh")
    bleu("de_char", "de.hyp", ["de.ref"], tokenize="char")
    bleu("de_13a_lc", "de.hyp", ["de.ref"], lowercase=True)
    bleu("fr_13a", "fr.hyp", ["fr.ref"])
    bleu("fr_intl", "fr.hyp", ["fr.ref"], tokenize="intl")
    bleu("fr_zh", "fr.hyp", ["fr.ref"], tokenize="zh")
    bleu("fr_char", "fr.hyp", ["fr.ref"], tokenize="char")
    bleu("fr_none", "fr.hyp", ["fr.ref"], tokenize="none")
    bleu("zh_zh", "zh.hyp", ["zh.ref"], tokenize="zh")
    bleu("zh_13a", "zh.hyp", ["zh.ref"])
    bleu("zh_intl", "zh.hyp", ["zh.ref"], tokenize="intl")
    bleu("zh_char", "zh.hyp", ["zh.ref"], tokenize="char")
    bleu("zh_none", "zh.hyp", ["zh.ref"], tokenize="none")
    bleu("zh_zh_lc", "zh.hyp", ["zh.ref"], tokenize="zh", lowercase=True)
    bleu("en_13a_lc", "en.hyp", ["en.ref"], lowercase=True)
    bleu("en_intl_lc", "en.hyp", ["en.ref"], tokenize="intl", lowercase=True)
    bleu("en_char_lc", "en.hyp", ["en.ref"], tokenize="char", lowercase=True)
    # Smoothing: at corpus level it only matters where an n-gram order has no match, as in
    # sparse.hyp; on en and zh it shows in the sentence-level scores.
    for smooth, value in [("exp", None), ("floor", None), ("floor", 0.2), ("add-k", None), ("add-k", 2),
                          ("none", None)]:
        suffix = "" if value is None else f"_{value}"
        bleu(f"sparse_13a_{smooth}{suffix}", "sparse.hyp", ["en.ref"], smooth=smooth, smooth_value=value)
        if smooth in ("exp", "none"):  # a smoothing value these methods ignore
            bleu(f"sparse_13a_{smooth}_0.5", "sparse.hyp", ["en.ref"], smooth=smooth, smooth_value=0.5)
        if smooth != "exp":
            bleu(f"en_13a_{smooth}{suffix}", "en.hyp", ["en.ref"], smooth=smooth, smooth_value=value)
            bleu(f"zh_zh_{smooth}{suffix}", "zh.hyp", ["zh.ref"], tokenize="zh", smooth=smooth,
                 smooth_value=value)
    bleu("crlf_13a", "crlf.hyp", ["crlf.ref"])
    bleu("nomatch_13a", "nomatch.hyp", ["en.ref"])  # no match at all: score 0
    bleu("short_13a", "short.hyp", ["en.ref"])  # brevity penalty well below 1
    bleu("short_13a_floor", "short.hyp", ["en.ref"], smooth="floor")
    bleu("en_13a_swapped", "en.ref", ["en.hyp"])  # hypothesis longer than the reference: BP = 1
    bleu("en_13a_identity", "en.ref", ["en.ref"])  # hypothesis = reference

    chrf("de_chrf", "de.hyp", ["de.ref"])
    chrf("de_chrf_two_refs", "de.hyp", ["de.ref", "de.ref2"])
    chrf("de_chrfpp", "de.hyp", ["de.ref"], word_order=2)
    chrf("de_chrfpp_two_refs", "de.hyp", ["de.ref", "de.ref2"], word_order=2)
    chrf("en_chrf", "en.hyp", ["en.ref"])
    chrf("en_chrfpp", "en.hyp", ["en.ref"], word_order=2)
    chrf("en_chrfpp_lc", "en.hyp", ["en.ref"], word_order=2, lowercase=True)
    chrf("en_chrf_whitespace", "en.hyp", ["en.ref"], whitespace=True)
    chrf("en_chrf_eps", "en.hyp", ["en.ref"], eps_smoothing=True)
    chrf("en_chrf_beta1_order8", "en.hyp", ["en.ref"], char_order=8, beta=1)
    chrf("fr_chrf", "fr.hyp", ["fr.ref"])
    chrf("fr_chrf_lc", "fr.hyp", ["fr.ref"], lowercase=True)
    chrf("fr_chrf_whitespace", "fr.hyp", ["fr.ref"], whitespace=True)
    chrf("zh_chrf", "zh.hyp", ["zh.ref"])
    chrf("zh_chrfpp", "zh.hyp", ["zh.ref"], word_order=2)
    chrf("random_chrf", "random.hyp", ["random.ref"])
    chrf("random_chrfpp_two_refs", "random.hyp", ["random.ref", "random.ref2"], word_order=2)
    chrf("random_chrfpp_two_refs_lc_whitespace", "random.hyp", ["random.ref", "random.ref2"], word_order=2,
         lowercase=True, whitespace=True)
    chrf("crlf_chrf", "crlf.hyp", ["crlf.ref"])
    chrf("nomatch_chrf", "nomatch.hyp", ["en.ref"])
    chrf("sparse_chrfpp", "sparse.hyp", ["en.ref"], word_order=2)
    return cases


TRICKY = [
    # 13a's regexps: dots and commas between digits, dashes after digits, runs of punctuation.
    "a..b", "1.2.3", "a,,b", "a.,b", "(1)", "3-4-5", "x-", "-x", ".5", "5.", "U.S.A.", "e.g.,",
    "a...b", "1...2", "1..2", "...", "!!!", "?!", "a,,,b", "1,,2", "((a))", "5 .", "-5-", "5--5",
    # entities and <skipped> (13a only; replaced once each, in this order: &quot; &amp; &lt; &gt;)
    "&amp;lt;", "&quot;hi&quot;", "&lt;&gt;", "<skipped>x", "x<skipped>", "a-\nb", "line\nbreak",
    "&amp;quot;", "&amp;amp;", "&amp;gt;", "&lt;skipped&gt;", "<skip<skipped>ped>", "<SKIPPED>", "&apos;",
    "&AMP;", "&amp", "&ampamp;", "&#39;", "&nbsp;",
    "1,000.50", "1.000,50", "-5", "5-", "2017.", "2017 .", "x 2017. y", "5%", "5% x", "Mr. Smith", "don't",
    "rock'n'roll", "a/b", "a\\b", "{a}", "[a]", "a^b", "a_b", "a`b", "a~b", "a|b", "a@b.c", "#1", "$5", "%d",
    "a&b", "a*b+c=d", "a;b:c", "a?b!c", "\"q\"", "'s'", "a\x7fb",
    # Unicode punctuation and symbols, also next to digits
    "¿Qué?", "¡Hola!", "Preis: 3,50 €.", "1‰", "°C", "±3", "3×4", "8÷2", "a‐b", "a–b", "a—b", "1–2", "1—2",
    "‘x’", "“x”", "«x»", "‹x›", "1⁄2", "TM™", "©2024", "®", "¶1", "§3", "·", "•", "…", "a…b", "2…3", "3…",
    "x²", "½", "Ⅻ", "٣٤", "٣.٤", "١,٢", "１２３", "１.５", "ＡＢＣ", "，。", "5€", "€5", "—", "¥100", "£5", "₹10",
    "₿1", "ℕ", "∑x", "√2", "∞", "≠", "≤", "→", "⇒", "★", "☺", "♪", "✓", "⌘", "⟨x⟩", "〈x〉", "「x」",
    "『x』", "【x】", "1.2‰", "2,5°", "3-½", "a_1", "^_^", "¨", "´", "˜", "a\u0301b", "e\u0301.",
    # Chinese, mixed with ASCII, and sacreBLEU's zh ranges: its '\u20000' typo makes U+2001..U+2A6D
    # count as Chinese (and U+20000 and beyond never); U+9FBC.. are outside its CJK ranges.
    "我爱NLP。", "他说：“好！”", "2023年10月5日", "价格12.5%", "iPhone15", "我们。", "你好,world.",
    "a\u2000b", "a\u2001b", "a\u2a6db", "a\u2a6eb", "a\U00020000b", "a𠮷b", "a\U0002f800b", "a\u2f81b",
    "a\u3400b", "a\u4db5b", "a\u4db6b", "a\u9fa5b", "a\u9fbbb", "a\u9fbcb", "a\u9fffb", "a\uf900b",
    "a\ufa2eb", "a\uff01b", "a\uffeeb", "a\ufffdb", "a\u2e80b", "a\u303fb", "a\u3041b", "aのb", "aポb",
    "a\u3105b", "a\u31c0b", "a\ufe10b", "a\ufe30b", "a\ufe50b", "a\u3200b", "a\u33ffb", "a\u3400",
    "ｶﾀｶﾅ", "１２.５", "3.5％", "a℃b", "a①b", "a\u2028b", "a\u202fb", "a\u3000b", "a\u200bb",
    # whitespace: leading, trailing, Unicode, and look-alikes that are not whitespace
    "  leading", "trailing  ", "\ttab\tseparated\t", "multi   space", "nbsp\u00a0here", "em\u2003space",
    "ideo\u3000space", "nel\u0085char", "zw\u200bspace", "bom\ufeffchar", "mvs\u180esep", "fs\x1cgs\x1dx",
    "vt\x0bff\x0cx", "cr\rx", "\u3000lead\u3000", " \u00a0 ", "\u2029",
    "😀!", "👍🏽.", "🇩🇪,", "a😀b", "İstanbul", "ΣΑΣ.", "ẞ", "ǅ", "Ǆ", "ﬁ", "ŉ", "Ω", "K",
    "http://example.com/a?b=c&d=e", "user@mail.com", "C++", "C#", "3.14159", "1e-5", "10^6",
    "a . b , c", " . ", ",", ".", "-", "", " ", "a", "5-5", "a-5", "5-a", "9.", ".9", ",9", "9,",
    "(a.b)", "[1,2]", "{x:y}", "<a>", "a<b>c", "'quoted'", "it's", "''", "--", "---", "a--b",
    "U.K.-based", "state-of-the-art", "e-mail", "3D", "4x4", "F-16", "No.1", "pp.3-4", "vs.",
    "Ph.D.", "a.m./p.m.", "$1,234.56", "€1.234,56",
]

LOWER = [
    "İstanbul", "İ", "ΣΑΣ", "ΟΔΥΣΣΕΥΣ", "Σ", "ΑΣ ΑΣ.", "ẞ", "STRAẞE", "ǅ", "Ǆ", "ǈ", "ǋ", "Ⅻ", "ＡＢＣ",
    "Ꭰꭰ", "ᲐᲑᲒ", "ÀÉÎÕÜ", "ÇĞİÖŞÜ", "ĲŒÆ", "Ω", "K", "Å", "ΐ", "ΆΈΉΊΌΎΏ", "ÅNGSTRÖM",
    "ПРИВЕТ МИР", "ԱԲԳ", "𐐀𐐁", "ǱǲǳA", "ΣA", "AΣ", "A.Σ", "AΣ.", "AΣ'", "Hello World",
    # the final-sigma rule: a cased letter before (skipping case-ignorable ones), none after
    "AΣ\u0301", "AΣ\u0301B", "A\u0301Σ", "1Σ", "AΣ1", "AΣ-B", "A'Σ", "AΣ'B", "ΣΣ", "AΣΣ", "ΣA Σ",
    "A\u00adΣ", "AΣ\u00ad", "AΣ\u200dB", "ǅΣ", "ⅫΣ", "ⒶΣ", "aΣ", "ªΣ",
    "Ⓐ", "ᾈ", "ᾼ", "ΆΣ", "İİ", "I\u0307", "Ⅰ", "Ａ", "𞤀", "𖹀", "ꟶ", "Ɦ", "ẞß", "ǰ", "İ\u0301",
]

SPLIT = [
    "a\tb\nc\x0bd\x0ce\rf\x1cg\x1dh\x1ei\x1fj k",
    "a\x85b\xa0c\u1680d\u2000e\u2001f\u2002g\u2003h\u2004i\u2005j\u2006k\u2007l\u2008m\u2009n\u200ao",
    "a\u2028b\u2029c\u202fd\u205fe\u3000f",
    "a\u200bb\ufeffc\u180ed\u00adE\u2060f\u200cg\u200dh\u2800i\u3164j\uffa0k\u115fl\x00m\x1bn",
    "  lead and trail  ", "", " ", "\u3000\u3000", "one", "\x1c\x1d\x1e\x1f", "\x85\xa0\u1680",
    "\t\n\x0b\x0c\r", "x\u2028", "\u2029x",
]


def check_assigned(strings, where):
    """Only code points assigned in this Python's Unicode (and so in any later one): fixtures must not
    depend on which Unicode version a tool implements."""
    for s in strings:
        for c in s:
            assert unicodedata.category(c) != "Cn", (where, s, hex(ord(c)))


def make_tokenize():
    tokenizers = {"13a": Tokenizer13a(), "intl": TokenizerV14International(), "zh": TokenizerZh(),
                  "char": TokenizerChar(), "none": NoneTokenizer()}
    assert len(set(TRICKY)) == len(TRICKY), [s for s in TRICKY if TRICKY.count(s) > 1]
    check_assigned(TRICKY + LOWER + SPLIT, "tokenize.json")
    out = {name: [[s, tok(s)] for s in TRICKY] for name, tok in tokenizers.items()}
    out["lower"] = [[s, s.lower()] for s in LOWER + TRICKY]
    out["split"] = [[s, s.split()] for s in SPLIT + TRICKY]
    return out


def dump(name, obj):
    with open(os.path.join(OUT, name), "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    if unicodedata.unidata_version != "14.0.0":
        print(f"note: Python's Unicode is {unicodedata.unidata_version}; the committed fixtures were "
              "made with 14.0.0 (Python 3.11)", file=sys.stderr)
    os.makedirs(OUT, exist_ok=True)
    make_corpora()
    for name in sorted(os.listdir(OUT)):
        if not name.endswith(".json"):
            with open(os.path.join(OUT, name), encoding="utf-8", newline="") as f:
                check_assigned([f.read()], name)
    dump("tokenize.json", make_tokenize())
    dump("expected.json", make_expected())


POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1)  # the CLI runs while the API computes

if __name__ == "__main__":
    main()
