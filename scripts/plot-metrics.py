#!/usr/bin/env python3
"""Plots a training run's metrics.jsonl (written by `dragoman train`) as a PNG: every curve it logs,
against the update step. Training loss and NLL with dev loss and NLL, dev BLEU, learning rate with
the gradient norm, throughput, and a panel for any other numeric key a newer version logs.

    scripts/plot-metrics.py RUN_DIR [--output RUN_DIR/metrics.png]

Values that are not finite are written as null in metrics.jsonl (JSON has no NaN): they are gaps in
the curves, as are records that lack a key. A torn last line (a run killed while writing) is
skipped with a warning.

Needs matplotlib (`pip install matplotlib` or `apt-get install python3-matplotlib`); the toolkit
itself does not need Python.
"""
import argparse
import json
import math
import os
import sys

# Panels: title, y label, and the curves (key, label, transform) drawn in it.
PANELS = [
    ("loss", "nats per target token", [
        ("loss", "train loss (label-smoothed)", None),
        ("ppl", "train NLL", math.log),
        ("valid_loss", "dev loss (label-smoothed)", None),
        ("valid_nll", "dev NLL", None),
    ]),
    ("dev BLEU", "BLEU", [("valid_bleu", "dev BLEU (sacreBLEU 13a)", None)]),
    ("learning rate", "learning rate", [("lr", "learning rate", None)]),
    ("gradient norm", "L2 norm", [("gnorm", "gradient norm (before clipping)", None)]),
    ("throughput", "target tokens / s", [("tgt_tokens_per_s", "target tokens per second", None)]),
]
# Keys that are bookkeeping, not curves.
NOT_CURVES = {"step", "epoch", "elapsed_s", "valid_tokens", "valid_ppl"}


def read_metrics(path):
    """The records of a metrics.jsonl file, in order; a torn line is skipped."""
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                print(f"plot-metrics: {path}:{number}: skipped, not JSON ({e})", file=sys.stderr)
                continue
            if isinstance(record, dict) and isinstance(record.get("step"), (int, float)):
                records.append(record)
    return records


def to_number(value, transform=None):
    """A value as a float for plotting: null, non-numbers and what the transform cannot take are NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    try:
        value = transform(value) if transform else float(value)
    except (ValueError, OverflowError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def series(records, key, transform=None):
    """(steps, values) of the records that have `key`; unusable values are NaN (gaps)."""
    steps, values = [], []
    for r in records:
        if key in r:
            steps.append(r["step"])
            values.append(to_number(r[key], transform))
    return steps, values


def panels(records):
    """The panels with at least one finite value: [(title, ylabel, [(label, steps, values)])]."""
    known = set(NOT_CURVES)
    result = []
    for title, ylabel, curves in PANELS:
        drawn = []
        for key, label, transform in curves:
            known.add(key)
            steps, values = series(records, key, transform)
            if any(not math.isnan(v) for v in values):
                drawn.append((label, steps, values))
        if drawn:
            result.append((title, ylabel, drawn))
    others = sorted({k for r in records for k, v in r.items()
                     if k not in known and isinstance(v, (int, float)) and not isinstance(v, bool)})
    for key in others:
        steps, values = series(records, key)
        if any(not math.isnan(v) for v in values):
            result.append((key, key, [(key, steps, values)]))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="run directory (holds metrics.jsonl)")
    parser.add_argument("--output", help="PNG file (default RUN/metrics.png)")
    args = parser.parse_args()
    metrics = os.path.join(args.run, "metrics.jsonl")
    if not os.path.exists(metrics):
        sys.exit(f"plot-metrics: {metrics} not found")
    drawn = panels(read_metrics(metrics))
    if not drawn:
        sys.exit(f"plot-metrics: {metrics} has no finite values to plot yet")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot-metrics: needs matplotlib (pip install matplotlib)")

    fig, axes = plt.subplots(len(drawn), 1, figsize=(9, 2.6 * len(drawn) + 1), sharex=True, squeeze=False)
    for ax, (title, ylabel, curves) in zip(axes[:, 0], drawn):
        for label, steps, values in curves:
            ax.plot(steps, values, "o-" if len(steps) < 50 else "-", markersize=3, label=label)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[-1, 0].set_xlabel("update step")
    fig.suptitle(os.path.abspath(args.run))
    fig.tight_layout()
    output = args.output or os.path.join(args.run, "metrics.png")
    fig.savefig(output, dpi=100)
    print(f"plot-metrics: wrote {output}")


if __name__ == "__main__":
    main()
