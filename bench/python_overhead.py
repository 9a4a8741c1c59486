#!/usr/bin/env python3
"""The Python package's overhead against the binary, and CTranslate2's Python API beside both.

    PYTHONPATH=build/python python3 bench/python_overhead.py MODEL INPUT [--beam 4] [--threads 1]
        [--repeat 3] [--binary build/src/dragoman] [--ct2 CT2_DIR --ct2-tools ../shared/bench/ct2]

Seconds for the same lines, best of --repeat, each tool's search with its batches: `dragoman
translate` (its own timing, the last log line), dragoman.Translator.translate_batch over every line
in one call and translate_file (the call timed in Python, the model loaded before), and with --ct2
a CTranslate2 conversion of the same weights through ctranslate2.Translator (translate_ct2.py with
Dragoman's batches, its own timing). Power length normalisation alpha 0.6 everywhere (CTranslate2's
only kind). Prints a table.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import dragoman


def cli_seconds(binary, model, path, beam, threads):
    out = subprocess.run([binary, "translate", "-m", model, "-i", path, "-o", os.devnull, "--beam", str(beam),
                          "--threads", str(threads), "--length-normalization", "power", "--length-penalty", "0.6"],
                         capture_output=True, text=True, check=True)
    return float(re.findall(r"translate: \d+ lines, .* in ([0-9.]+) s", out.stderr)[-1])


def ct2_seconds(tools, ct2_dir, path, beam, threads):
    out = subprocess.run([sys.executable, os.path.join(tools, "translate_ct2.py"), "--model", ct2_dir, "--input", path,
                          "--output", os.devnull, "--beam", str(beam), "--alpha", "0.6", "--threads", str(threads),
                          "--batching", "dragoman"], capture_output=True, text=True, check=True)
    return float(re.findall(r"ct2: \d+ lines, .* in ([0-9.]+) s", out.stdout + out.stderr)[-1])


def timed(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--binary", default="build/src/dragoman")
    ap.add_argument("--ct2", help="a CTranslate2 conversion of MODEL (dragoman_to_ct2.py)")
    ap.add_argument("--ct2-tools", default="../shared/bench/ct2")
    a = ap.parse_args()
    with open(a.input, encoding="utf-8") as f:
        lines = f.read().splitlines()
    options = dict(beam=a.beam, length_normalization="power", length_penalty=0.6)
    translator = dragoman.Translator(a.model, threads=a.threads)
    rows = []
    rows.append(("dragoman translate (the binary)",
                 min(cli_seconds(a.binary, a.model, a.input, a.beam, a.threads) for _ in range(a.repeat))))
    rows.append(("dragoman.Translator.translate_batch",
                 min(timed(lambda: translator.translate_batch(lines, **options)) for _ in range(a.repeat))))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.txt")
        rows.append(("dragoman.Translator.translate_file",
                     min(timed(lambda: translator.translate_file(a.input, out, **options)) for _ in range(a.repeat))))
    if a.ct2:
        rows.append(("ctranslate2.Translator (translate_ct2.py)",
                     min(ct2_seconds(a.ct2_tools, a.ct2, a.input, a.beam, a.threads) for _ in range(a.repeat))))
    base = rows[0][1]
    print(f"{len(lines)} lines, beam {a.beam}, {a.threads} thread(s), best of {a.repeat}")
    print("| path | seconds | against the binary |")
    print("|---|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {seconds / base:.3f} |")


if __name__ == "__main__":
    main()
