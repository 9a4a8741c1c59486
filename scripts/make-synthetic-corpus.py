#!/usr/bin/env python3
"""Writes a deterministic synthetic parallel corpus for benchmarks: PREFIX.ref and PREFIX.hyp.

References are German-like sentences from a fixed vocabulary (umlauts, punctuation, numbers);
hypotheses are noisy copies (words dropped, replaced, swapped) so that BLEU is around 30-50.
Bench tooling only: the toolkit itself never needs Python.
"""
import argparse
import random

WORDS = ("der die das und ist nicht ein eine mit für auf den dem des im zu von sich es wird "
         "Haus Straße Übersetzung Maschine Modell Sprache Größe Ärger König schön groß über "
         "heute morgen gestern Jahr Woche Stunde Minute Zeit Welt Stadt Land Fluss Berg").split()
PUNCT = [",", ".", "!", "?", ":", ";", "„", "“", "(", ")", "-", "–", "€", "%"]


def sentence(rng):
    n = rng.randint(3, 40)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.08:
            out.append(rng.choice(PUNCT))
        elif r < 0.12:
            out.append(f"{rng.randint(0, 9999)}{rng.choice(['', '.5', ',25', '-3'])}")
        else:
            out.append(rng.choice(WORDS))
    text = " ".join(out)
    return text[0].upper() + text[1:] + rng.choice([".", "!", "?", ""])


def noisy(rng, ref):
    words = ref.split()
    out = []
    for w in words:
        r = rng.random()
        if r < 0.08:
            continue
        if r < 0.18:
            out.append(rng.choice(WORDS))
        else:
            out.append(w)
    if len(out) > 3 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=1000000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True, help="output prefix")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with open(args.out + ".ref", "w", encoding="utf-8") as ref, open(args.out + ".hyp", "w", encoding="utf-8") as hyp:
        for _ in range(args.lines):
            r = sentence(rng)
            ref.write(r + "\n")
            hyp.write(noisy(rng, r) + "\n")


if __name__ == "__main__":
    main()
