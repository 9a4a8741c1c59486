#!/usr/bin/env python3
"""Generates the BLEU/chrF fixtures in tests/fixtures/bleu/ with the real sacreBLEU.

The C++ tests (tests/eval/test_bleu.cpp, test_chrf.cpp, test_tokenizers.cpp,
tests/text/test_unicode.cpp) compare Dragoman's score-bleu against these files, so the tests
themselves need no Python. Deterministic: re-running writes byte-identical files.

    pip install sacrebleu==2.5.1 && python3 tests/eval/gen_bleu_fixtures.py

Writes: the text corpora (*.hyp, *.ref, *.ref2), expected.json (corpus statistics, scores, the
CLI's printed text and JSON, sentence-level scores per case) and tokenize.json (each tokenizer's
output on tricky strings, Python's str.lower() and str.split() on special cases).
"""
import json
import os
import random
import subprocess
import sys

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
    if rng.random() < 0.15:
        text = text.replace(",", " ,").replace(".", " .")
    if rng.random() < 0.1:
        text = text[: len(text) // 2]
    return text


def write_lines(name, lines, newline="\n"):
    with open(os.path.join(OUT, name), "w", encoding="utf-8", newline="") as f:
        for line in lines:
            f.write(line + newline)


def vocab_of(lines):
    return sorted({w for line in lines for w in line.split() if w})


def make_corpora():
    rng = random.Random(20261122)
    # German: two references, empty lines in the hypothesis, in one reference, and in both.
    de_ref = list(DE)
    de_ref2 = [perturb(rng, line, vocab_of(DE)) for line in DE]
    de_hyp = [perturb(rng, line, vocab_of(DE)) for line in DE]
    for i in (5, 17, 30):
        de_hyp[i] = ""
    for i in (9, 22):
        de_ref2[i] = ""
    de_ref[40] = de_ref2[40] = de_hyp[40] = ""
    write_lines("de.ref", de_ref)
    write_lines("de.ref2", de_ref2)
    write_lines("de.hyp", de_hyp)

    write_lines("fr.ref", FR)
    write_lines("fr.hyp", [perturb(rng, line, vocab_of(FR)) for line in FR])

    # Chinese has no spaces to perturb on: drop, repeat and swap characters instead.
    zh_hyp = []
    for line in ZH:
        chars = list(line)
        out = [c for c in chars if rng.random() > 0.1]
        if len(out) > 4 and rng.random() < 0.5:
            i = rng.randrange(len(out) - 1)
            out[i], out[i + 1] = out[i + 1], out[i]
        zh_hyp.append("".join(out))
    write_lines("zh.ref", ZH)
    write_lines("zh.hyp", zh_hyp)

    write_lines("en.ref", EN)
    write_lines("en.hyp", [perturb(rng, line, vocab_of(EN)) for line in EN])

    # A large random corpus: words, numbers, ASCII and Unicode punctuation and symbols.
    words = vocab_of(DE + FR + EN)[:400]
    punct = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + list("¿¡·•‰€£°±×÷‐–—‘’“”«»‹›⁄™©®¶§")
    numbers = ["1,000", "3.14", "2-3", "-5", ".5", "5.", "10", "1.000,5", "42", "2017."]
    ref, ref2, hyp = [], [], []
    for _ in range(3000):
        tokens = []
        for _ in range(rng.randint(0, 25)):
            r = rng.random()
            if r < 0.15:
                tokens.append(rng.choice(punct))
            elif r < 0.25:
                tokens.append(rng.choice(numbers))
            elif r < 0.32:
                tokens.append(rng.choice(words) + rng.choice(punct))
            else:
                tokens.append(rng.choice(words))
        sep = lambda: " " if rng.random() < 0.9 else ""
        line = "".join(t + sep() for t in tokens).strip()
        ref.append(line)
        ref2.append(perturb(rng, line, words))
        hyp.append(perturb(rng, line, words))
    write_lines("random.ref", ref)
    write_lines("random.ref2", ref2)
    write_lines("random.hyp", hyp)

    # Windows line ends.
    write_lines("crlf.ref", EN[:8], newline="\r\n")
    write_lines("crlf.hyp", [perturb(rng, line, vocab_of(EN)) for line in EN[:8]], newline="\r\n")

    # A hypothesis with no match at all, and a short one (brevity penalty).
    write_lines("nomatch.hyp", ["zzz qqq"] * len(EN))
    write_lines("short.hyp", [" ".join(line.split()[:3]) for line in EN])


def read_lines(name):
    # As the sacreBLEU CLI reads files.
    with open(os.path.join(OUT, name), encoding="utf-8", newline="\n") as f:
        return [line.rstrip() for line in f]


def cli(refs, hyp, args):
    cmd = [sys.executable, "-m", "sacrebleu"] + [os.path.join(OUT, r) for r in refs]
    cmd += ["-i", os.path.join(OUT, hyp)] + args
    return subprocess.run(cmd, check=True, capture_output=True, text=True, encoding="utf-8").stdout


def bleu_case(name, hyp, refs, tokenize="13a", lowercase=False, smooth="exp", smooth_value=None):
    args = ["-m", "bleu", "--tokenize", tokenize, "--smooth-method", smooth]
    if lowercase:
        args.append("-lc")
    if smooth_value is not None:
        args += ["--smooth-value", str(smooth_value)]
    hyps = read_lines(hyp)
    ref_streams = [read_lines(r) for r in refs]
    metric = BLEU(tokenize=tokenize, lowercase=lowercase, smooth_method=smooth, smooth_value=smooth_value)
    score = metric.corpus_score(hyps, ref_streams)
    sentence_metric = BLEU(tokenize=tokenize, lowercase=lowercase, smooth_method=smooth,
                           smooth_value=smooth_value, effective_order=True)
    sentence = [sentence_metric.sentence_score(h, [s[i] for s in ref_streams]).score
                for i, h in enumerate(hyps[:200])]
    text = cli(refs, hyp, args + ["-f", "text", "-w", "2"]).rstrip("\n")
    assert f"= {score.score:.2f} " in text, (name, text, score.score)
    return {
        "name": name, "metric": "bleu", "hyp": hyp, "refs": refs, "args": args,
        "options": {"tokenize": tokenize, "lowercase": lowercase, "smooth_method": smooth,
                    "smooth_value": smooth_value},
        "corpus": {
            "score": score.score, "counts": [float(c) for c in score.counts],
            "totals": [float(t) for t in score.totals], "precisions": score.precisions,
            "bp": score.bp, "sys_len": score.sys_len, "ref_len": score.ref_len,
            "text": text,
            "text_width4": cli(refs, hyp, args + ["-f", "text", "-w", "4"]).rstrip("\n"),
            "json": json.loads(cli(refs, hyp, args + ["-f", "json", "-w", "2"])),
        },
        "sentence": sentence,
        "sentence_text": cli(refs, hyp, args + ["-f", "text", "-w", "2", "--sentence-level"]).splitlines()[:5],
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
    hyps = read_lines(hyp)
    ref_streams = [read_lines(r) for r in refs]
    kwargs = dict(char_order=char_order, word_order=word_order, beta=beta, lowercase=lowercase,
                  whitespace=whitespace, eps_smoothing=eps_smoothing)
    score = CHRF(**kwargs).corpus_score(hyps, ref_streams)
    sentence_metric = CHRF(**kwargs)
    sentence = [sentence_metric.sentence_score(h, [s[i] for s in ref_streams]).score
                for i, h in enumerate(hyps[:200])]
    text = cli(refs, hyp, args + ["-f", "text", "-w", "2"]).rstrip("\n")
    assert f"= {score.score:.2f}" in text, (name, text, score.score)
    return {
        "name": name, "metric": "chrf", "hyp": hyp, "refs": refs, "args": args,
        "options": kwargs,
        "corpus": {"score": score.score, "text": text,
                   "json": json.loads(cli(refs, hyp, args + ["-f", "json", "-w", "2"]))},
        "sentence": sentence,
    }


def make_expected():
    cases = []
    for tok in ["13a", "intl", "zh", "char", "none"]:
        for corpus in ["random", "en"]:
            cases.append(bleu_case(f"{corpus}_{tok}", f"{corpus}.hyp", [f"{corpus}.ref"], tokenize=tok))
    cases.append(bleu_case("random_13a_two_refs", "random.hyp", ["random.ref", "random.ref2"]))
    cases.append(bleu_case("random_intl_two_refs_lc", "random.hyp", ["random.ref", "random.ref2"],
                           tokenize="intl", lowercase=True))
    cases.append(bleu_case("de_13a", "de.hyp", ["de.ref"]))
    cases.append(bleu_case("de_13a_two_refs", "de.hyp", ["de.ref", "de.ref2"]))
    cases.append(bleu_case("de_intl_two_refs", "de.hyp", ["de.ref", "de.ref2"], tokenize="intl"))
    cases.append(bleu_case("de_13a_lc", "de.hyp", ["de.ref"], lowercase=True))
    cases.append(bleu_case("fr_13a", "fr.hyp", ["fr.ref"]))
    cases.append(bleu_case("fr_intl", "fr.hyp", ["fr.ref"], tokenize="intl"))
    cases.append(bleu_case("fr_char", "fr.hyp", ["fr.ref"], tokenize="char"))
    cases.append(bleu_case("zh_zh", "zh.hyp", ["zh.ref"], tokenize="zh"))
    cases.append(bleu_case("zh_13a", "zh.hyp", ["zh.ref"]))
    cases.append(bleu_case("zh_char", "zh.hyp", ["zh.ref"], tokenize="char"))
    cases.append(bleu_case("en_13a_lc", "en.hyp", ["en.ref"], lowercase=True))
    for smooth, value in [("floor", None), ("floor", 0.2), ("add-k", None), ("add-k", 2), ("none", None)]:
        suffix = "" if value is None else f"_{value}"
        cases.append(bleu_case(f"en_13a_{smooth}{suffix}", "en.hyp", ["en.ref"], smooth=smooth, smooth_value=value))
        cases.append(bleu_case(f"zh_zh_{smooth}{suffix}", "zh.hyp", ["zh.ref"], tokenize="zh", smooth=smooth,
                               smooth_value=value))
    cases.append(bleu_case("crlf_13a", "crlf.hyp", ["crlf.ref"]))
    cases.append(bleu_case("nomatch_13a", "nomatch.hyp", ["en.ref"]))
    cases.append(bleu_case("short_13a", "short.hyp", ["en.ref"]))
    cases.append(bleu_case("short_13a_floor", "short.hyp", ["en.ref"], smooth="floor"))

    cases.append(chrf_case("de_chrf", "de.hyp", ["de.ref"]))
    cases.append(chrf_case("de_chrf_two_refs", "de.hyp", ["de.ref", "de.ref2"]))
    cases.append(chrf_case("de_chrfpp", "de.hyp", ["de.ref"], word_order=2))
    cases.append(chrf_case("en_chrfpp_two_refs", "en.hyp", ["en.ref"], word_order=2))
    cases.append(chrf_case("fr_chrf_lc", "fr.hyp", ["fr.ref"], lowercase=True))
    cases.append(chrf_case("en_chrf_whitespace", "en.hyp", ["en.ref"], whitespace=True))
    cases.append(chrf_case("zh_chrf", "zh.hyp", ["zh.ref"]))
    cases.append(chrf_case("random_chrfpp_two_refs", "random.hyp", ["random.ref", "random.ref2"], word_order=2))
    cases.append(chrf_case("en_chrf_eps", "en.hyp", ["en.ref"], eps_smoothing=True))
    cases.append(chrf_case("en_chrf_beta1_order8", "en.hyp", ["en.ref"], char_order=8, beta=1))
    cases.append(chrf_case("nomatch_chrf", "nomatch.hyp", ["en.ref"]))
    return cases


TRICKY = [
    "a..b", "1.2.3", "a,,b", "a.,b", "(1)", "3-4-5", "x-", "-x", ".5", "5.", "U.S.A.", "e.g.,",
    "&amp;lt;", "&quot;hi&quot;", "&lt;&gt;", "<skipped>x", "x<skipped>", "a-\nb", "line\nbreak",
    "1,000.50", "1.000,50", "-5", "5-", "2017.", "2017 .", "Mr. Smith", "don't", "rock'n'roll",
    "a/b", "a\\b", "{a}", "[a]", "a^b", "a_b", "a`b", "a~b", "a|b", "a@b.c", "#1", "$5", "%d", "a&b",
    "a*b+c=d", "a;b:c", "a?b!c", "\"q\"", "'s'", "¿Qué?", "¡Hola!", "Preis: 3,50 €.", "1‰", "°C",
    "±3", "3×4", "8÷2", "a‐b", "a–b", "a—b", "‘x’", "“x”", "«x»", "‹x›", "1⁄2", "TM™", "©2024",
    "®", "¶1", "§3", "·", "•", "…", "a…b", "2…3", "x²", "½", "Ⅻ", "٣٤", "１２３", "ＡＢＣ", "，。",
    "我爱NLP。", "他说：“好！”", "2023年10月5日", "价格12.5%", "iPhone15", "€5", "5€", "—",
    "  leading", "trailing  ", "\ttab\tseparated\t", "multi   space", "nbsp\u00a0here", "em\u2003space",
    "ideo\u3000space", "nel\u0085char", "zw\u200bspace", "bom\ufeffchar", "mvs\u180esep",
    "😀!", "👍🏽.", "🇩🇪,", "a😀b", "İstanbul", "ΣΑΣ.", "ẞ", "ǅ", "Ǆ", "ﬁ", "ŉ", "Ω", "K",
    "http://example.com/a?b=c&d=e", "user@mail.com", "C++", "C#", "3.14159", "1e-5", "10^6",
    "a . b , c", " . ", ",", ".", "-", "", " ", "a", "5-5", "a-5", "5-a", "9.", ".9", ",9", "9,",
    "(a.b)", "[1,2]", "{x:y}", "<a>", "a<b>c", "'quoted'", "it's", "''", "--", "---", "a--b",
    "U.K.-based", "state-of-the-art", "e-mail", "3D", "4x4", "F-16", "No.1", "pp.3-4", "vs.",
    "Ph.D.", "a.m./p.m.", "$1,234.56", "€1.234,56", "¥100", "£5", "₹10", "₿1", "ℕ", "∑x", "√2",
    "∞", "≠", "≤", "→", "⇒", "★", "☺", "♪", "✓", "⌘", "⟨x⟩", "〈x〉", "「x」", "『x』", "【x】",
]

LOWER = [
    "İstanbul", "İ", "ΣΑΣ", "ΟΔΥΣΣΕΥΣ", "Σ", "ΑΣ ΑΣ.", "ẞ", "STRAẞE", "ǅ", "Ǆ", "ǈ", "Ⅻ", "ＡＢＣ",
    "Ꭰꭰ", "ᲐᲑᲒ", "ÀÉÎÕÜ", "ÇĞİÖŞÜ", "ĲŒÆ", "Ω", "K", "Å", "ΐ", "ΆΈΉΊΌΎΏ", "ÅNGSTRÖM",
    "ПРИВЕТ МИР", "ԱԲԳ", "𐐀𐐁", "ǱǲǳA", "ΣA", "AΣ", "A.Σ", "AΣ.", "AΣ'", "Hello World",
]

SPLIT = [
    "a\tb\nc\x0bd\x0ce\rf\x1cg\x1dh\x1ei\x1fj k",
    "a\x85b\xa0c\u1680d\u2000e\u2001f\u2002g\u2003h\u2004i\u2005j\u2006k\u2007l\u2008m\u2009n\u200ao",
    "a\u2028b\u2029c\u202fd\u205fe\u3000f",
    "a\u200bb\ufeffc\u180ed\u00adE\u2060f",
    "  lead and trail  ", "", " ", "\u3000\u3000", "one",
]


def make_tokenize():
    tokenizers = {"13a": Tokenizer13a(), "intl": TokenizerV14International(), "zh": TokenizerZh(),
                  "char": TokenizerChar(), "none": NoneTokenizer()}
    out = {name: [[s, tok(s)] for s in TRICKY] for name, tok in tokenizers.items()}
    out["lower"] = [[s, s.lower()] for s in LOWER + TRICKY]
    out["split"] = [[s, s.split()] for s in SPLIT + TRICKY]
    return out


def dump(name, obj):
    with open(os.path.join(OUT, name), "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    make_corpora()
    dump("tokenize.json", make_tokenize())
    dump("expected.json", make_expected())


if __name__ == "__main__":
    main()
