#!/usr/bin/env python3
"""Model FLOPs of a beam search over a file, for scripts/bench-translate-gpu.sh's TFLOP/s and MFU
columns. A benchmark instrument, not a runtime dependency.

    python3 bench/translate_flops.py MODEL.safetensors LINES SOURCE_TOKENS TARGET_TOKENS BEAM SECONDS \
        PRECISION GPU_NAME

Prints "TFLOP/s MFU%" ("- -" for MFU where the GPU's peak is unknown). The count, as
bench/model_flops.h counts a training step (every matrix product 2 m n k, attention's products over
every key, the output projection over the vocabulary; element-wise work, softmax and top-k not
counted), at each sentence's mean lengths S and T (SOURCE_TOKENS / LINES, TARGET_TOKENS / LINES):
- the encoder over S tokens, once a sentence;
- the cross-attention's keys and values of the S source tokens, once a sentence;
- BEAM rows a decoder step for T steps: self-attention's projections and the feed-forward, the
  cross-attention's query and output projections, attention over the t tokens so far and the S
  source tokens, and the output projection over the vocabulary.
Every hypothesis counted for T steps: exact for the benchmark's models after one update, whose
hypotheses all run to the length cap; above the work done where hypotheses end early.
The peaks are bench/model_flops.h's: dense bf16/fp16 on tensor cores, or f32 without TF32 (fp32).
"""
import json
import struct
import sys


def model_config(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
    return json.loads(header["__metadata__"]["model_config"])


def peak_flops(gpu, sixteen_bit):
    if "H100" in gpu and "PCIe" in gpu:
        return 756e12 if sixteen_bit else 51e12
    if "H100" in gpu or "H200" in gpu:
        return 989e12 if sixteen_bit else 67e12
    if "A100" in gpu:
        return 312e12 if sixteen_bit else 19.5e12
    return 0.0


def search_flops(c, lines, source_tokens, target_tokens, beam):
    d, f, v = float(c["d_model"]), float(c["d_ff"]), float(c["tgt_vocab_size"])
    s = source_tokens / lines
    t = target_tokens / lines
    encoder = c["encoder_layers"] * (s * (4 * d * d + 2 * d * f) + 2 * s * s * d)
    cross_keys = c["decoder_layers"] * s * 2 * d * d
    # One row's decoder over T steps: sum over t = 1..T of 2 t d (self-attention) is T (T + 1) d.
    row = c["decoder_layers"] * (t * (4 * d * d + 2 * d * f + 2 * d * d + 2 * s * d) + t * (t + 1) * d) + t * d * v
    return 2.0 * lines * (encoder + cross_keys + beam * row)


def main(argv):
    if len(argv) != 9:
        sys.exit(__doc__)
    model, lines, source, target, beam, seconds, precision, gpu = argv[1:]
    flops = search_flops(model_config(model), int(lines), int(source), int(target), int(beam))
    rate = flops / float(seconds)
    peak = peak_flops(gpu, precision in ("bf16", "fp16"))
    print(f"{rate / 1e12:.2f} {100 * rate / peak:.1f}%" if peak > 0 else f"{rate / 1e12:.2f} -")


if __name__ == "__main__":
    main(sys.argv)
