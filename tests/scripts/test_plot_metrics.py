#!/usr/bin/env python3
"""scripts/plot-metrics.py reads what `dragoman train` writes, including what goes wrong: non-finite
values written as null, records without a key, a torn last line. Checks the data layer (what would
be drawn); drawing itself needs matplotlib, which the tests do not install.

    python3 tests/scripts/test_plot_metrics.py SOURCE_DIR
"""
import importlib.util
import json
import math
import os
import sys
import tempfile

source = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
spec = importlib.util.spec_from_file_location("plot_metrics", os.path.join(source, "scripts", "plot-metrics.py"))
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)

failures = 0
passes = 0


def check(name, condition):
    global failures, passes
    if condition:
        passes += 1
    else:
        failures += 1
        print(f"FAIL {name}")


records = [
    {"step": 1, "epoch": 1, "loss": 9.1, "ppl": 8000.0, "lr": 1e-4, "gnorm": 3.0, "tgt_tokens_per_s": 900.0},
    {"step": 2, "epoch": 1, "loss": None, "ppl": None, "lr": 2e-4, "gnorm": None, "tgt_tokens_per_s": 950.0},
    {"step": 2, "valid_loss": 8.0, "valid_nll": 7.9, "valid_ppl": None, "valid_tokens": 100, "valid_bleu": 1.5},
    {"step": 3, "epoch": 1, "loss": 7.0, "ppl": 900.0, "lr": 3e-4, "gnorm": 2.0, "tgt_tokens_per_s": 990.0,
     "loss_scale": 65536},
    {"step": 4, "valid_loss": 6.5, "valid_nll": None, "valid_ppl": 700.0, "valid_tokens": 100},
]
with tempfile.TemporaryDirectory() as run:
    path = os.path.join(run, "metrics.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
        f.write('{"step": 5, "loss": 6.')  # torn by a kill
    read = plot.read_metrics(path)
    check("torn line skipped", len(read) == len(records))
    drawn = {title: curves for title, _, curves in plot.panels(read)}
    check("loss panel", "loss" in drawn)
    labels = {label: (steps, values) for label, steps, values in drawn.get("loss", [])}
    check("train loss gap", math.isnan(labels["train loss (label-smoothed)"][1][1]))
    check("train loss values", labels["train loss (label-smoothed)"][1][0] == 9.1)
    check("train NLL from ppl", abs(labels["train NLL"][1][0] - math.log(8000.0)) < 1e-12)
    check("train NLL of null is a gap", math.isnan(labels["train NLL"][1][1]))
    check("dev NLL with a gap", labels["dev NLL"][0] == [2, 4] and math.isnan(labels["dev NLL"][1][1]))
    check("dev BLEU plotted", "dev BLEU" in drawn and drawn["dev BLEU"][0][1:] == ([2], [1.5]))
    check("gradient norm gap", math.isnan(drawn["gradient norm"][0][2][1]))
    check("throughput plotted", drawn["throughput"][0][2] == [900.0, 950.0, 990.0])
    check("an unknown key gets its own panel", "loss_scale" in drawn)
    check("bookkeeping is not a curve", "epoch" not in drawn and "valid_tokens" not in drawn)
    check("non-numbers are gaps", math.isnan(plot.to_number("x")) and math.isnan(plot.to_number(True)))
    check("log of 0 is a gap", math.isnan(plot.to_number(0.0, math.log)))
    check("infinity is a gap", math.isnan(plot.to_number(1e308 * 10)))

print(f"plot_metrics: {passes} passed, {failures} failed")
sys.exit(1 if failures else 0)
