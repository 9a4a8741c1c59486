#!/usr/bin/env python3
"""Plots a training run's metrics.jsonl (written by `dragoman train`) as a PNG: training loss and
perplexity, dev loss and perplexity, learning rate and gradient norm, against the update step.

    scripts/plot-metrics.py RUN_DIR [--output RUN_DIR/metrics.png]

Needs matplotlib (`pip install matplotlib` or `apt-get install python3-matplotlib`); the toolkit
itself does not need Python.
"""
import argparse
import json
import math
import os
import sys


def read_metrics(path):
    train, valid = [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot-metrics: {path}:{number}: not JSON ({e})")
            (valid if "valid_nll" in record else train).append(record)
    return train, valid


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="run directory (holds metrics.jsonl)")
    parser.add_argument("--output", help="PNG file (default RUN/metrics.png)")
    args = parser.parse_args()
    metrics = os.path.join(args.run, "metrics.jsonl")
    if not os.path.exists(metrics):
        sys.exit(f"plot-metrics: {metrics} not found")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot-metrics: needs matplotlib (pip install matplotlib)")
    train, valid = read_metrics(metrics)
    if not train:
        sys.exit(f"plot-metrics: {metrics} has no training records yet")

    fig, (ax_loss, ax_lr) = plt.subplots(2, 1, figsize=(9, 8), sharex=True)
    steps = [r["step"] for r in train]
    ax_loss.plot(steps, [r["loss"] for r in train], label="train loss (label-smoothed)")
    ax_loss.plot(steps, [math.log(r["ppl"]) for r in train], label="train NLL", alpha=0.7)
    if valid:
        ax_loss.plot([r["step"] for r in valid], [r["valid_nll"] for r in valid], "o-", label="dev NLL")
        best = min(valid, key=lambda r: r["valid_nll"])
        ax_loss.annotate(f"best {best['valid_nll']:.3f} (ppl {best['valid_ppl']:.2f})", (best["step"], best["valid_nll"]),
                         textcoords="offset points", xytext=(0, 10), ha="center")
    ax_loss.set_ylabel("nats per target token")
    ax_loss.legend()
    ax_loss.grid(alpha=0.3)
    ax_lr.plot(steps, [r["lr"] for r in train], color="tab:green", label="learning rate")
    ax_lr.set_ylabel("learning rate")
    ax_norm = ax_lr.twinx()
    ax_norm.plot(steps, [r["gnorm"] for r in train], color="tab:red", alpha=0.6, label="gradient norm")
    ax_norm.set_ylabel("gradient norm")
    ax_lr.set_xlabel("update step")
    ax_lr.grid(alpha=0.3)
    lines = ax_lr.get_lines() + ax_norm.get_lines()
    ax_lr.legend(lines, [line.get_label() for line in lines], loc="upper right")
    fig.suptitle(os.path.abspath(args.run))
    fig.tight_layout()
    output = args.output or os.path.join(args.run, "metrics.png")
    fig.savefig(output, dpi=100)
    print(f"plot-metrics: wrote {output}")


if __name__ == "__main__":
    main()
