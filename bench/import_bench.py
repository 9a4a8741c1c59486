#!/usr/bin/env python3
"""CPU translation speed of an imported model: a base-size MarianMT model (random weights,
SentencePiece vocabularies from the demo corpus, the OPUS-MT layout) converted by `dragoman convert`
and by CTranslate2's own converter (TransformersConverter), translated by both on the same lines,
in fp32 and int8, beam 4 and greedy, 1 and 2 threads. Prints a markdown table.

    python3 bench/import_bench.py --dragoman build/src/dragoman --corpus data/demo [--lines 500]

A benchmark instrument (scripts/bench-import.sh), not a dependency of Dragoman: needs torch,
transformers, sentencepiece and ctranslate2. Both decoders get the same work: a fixed cap of 30
target tokens (random weights never emit EOS early), power length normalisation (CTranslate2's),
the source with its </s>, sentences in batches of at most 64 (CTranslate2: max_batch_size 64).
Times cover encoding, search and decoding of all lines, not loading the model; each cell is the
best of --repeats runs.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import ctranslate2
import sentencepiece as spm
import torch
from transformers import MarianConfig, MarianMTModel


def make_model(corpus, out, vocab_size):
    os.makedirs(out, exist_ok=True)
    for side, lang in (("source", "en"), ("target", "de")):
        spm.SentencePieceTrainer.train(input=os.path.join(corpus, "train." + lang), model_prefix=os.path.join(out, side),
                                       vocab_size=vocab_size, model_type="unigram", input_sentence_size=200000,
                                       shuffle_input_sentence=True, minloglevel=2)
        os.replace(os.path.join(out, side + ".model"), os.path.join(out, side + ".spm"))
    vocab = {"</s>": 0, "<unk>": 1}
    for side in ("source", "target"):
        sp = spm.SentencePieceProcessor(model_file=os.path.join(out, side + ".spm"))
        for i in range(sp.get_piece_size()):
            p = sp.id_to_piece(i)
            if not (sp.is_control(i) or sp.is_unknown(i)) and p not in vocab:
                vocab[p] = len(vocab)
    vocab["<pad>"] = len(vocab)
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"source_lang": "en", "target_lang": "de", "separate_vocabs": False}, f)
    v, pad = len(vocab), vocab["<pad>"]
    cfg = MarianConfig(vocab_size=v, decoder_vocab_size=v, d_model=512, encoder_layers=6, decoder_layers=6,
                       encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                       activation_function="swish", max_position_embeddings=512, scale_embedding=True,
                       pad_token_id=pad, eos_token_id=0, decoder_start_token_id=pad, forced_eos_token_id=0,
                       share_encoder_decoder_embeddings=True, tie_word_embeddings=True)
    torch.manual_seed(1)
    model = MarianMTModel(cfg).eval()
    with torch.no_grad():
        model.model.shared.weight[pad].zero_()
    model.save_pretrained(out, safe_serialization=True)
    return vocab


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dragoman", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--lines", type=int, default=500)
    ap.add_argument("--vocab-size", type=int, default=8000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="dragoman-import-bench-")
    hf = os.path.join(work, "hf")
    if not os.path.exists(os.path.join(hf, "model.safetensors")):
        make_model(a.corpus, hf, a.vocab_size)
    ours = os.path.join(work, "model.safetensors")
    subprocess.run([a.dragoman, "convert", "--from", "hf", hf, "-o", ours, "-q"], check=True)
    ct2_dirs = {}
    for q in ("float32", "int8"):
        d = os.path.join(work, "ct2-" + q)
        if not os.path.exists(os.path.join(d, "model.bin")):
            ctranslate2.converters.TransformersConverter(hf).convert(d, quantization=None if q == "float32" else q,
                                                                     force=True)
        ct2_dirs[q] = d
    with open(os.path.join(a.corpus, "test.en"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()][: a.lines]
    inp = os.path.join(work, "input.en")
    with open(inp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    sp = spm.SentencePieceProcessor(model_file=os.path.join(hf, "source.spm"))
    sources = [sp.encode(line, out_type=str) + ["</s>"] for line in lines]

    def ours_run(precision, beam, threads):
        best = None
        for _ in range(a.repeats):
            r = subprocess.run([a.dragoman, "translate", "-m", ours, "-i", inp, "-o", os.path.join(work, "out.txt"),
                                "--precision", precision, "--beam", str(beam), "--threads", str(threads),
                                "--length-normalization", "power", "--length-penalty", "0.6", "--max-length-a", "0",
                                "--max-length-b", "30", "--batch-sentences", "64"],
                               check=True, capture_output=True, text=True)
            summary = [l for l in r.stderr.splitlines() if "target tokens (1-best) in" in l][-1]
            tokens = int(summary.split(" target tokens")[0].split(", ")[-1].replace(",", ""))
            seconds = float(summary.split(" in ")[1].split(" s")[0])
            best = (tokens, seconds) if best is None or seconds < best[1] else best
        return best

    def ct2_run(q, beam, threads):
        tr = ctranslate2.Translator(ct2_dirs[q], device="cpu", intra_threads=threads, inter_threads=1, compute_type=q)
        best = None
        for _ in range(a.repeats):
            start = time.perf_counter()
            res = tr.translate_batch(sources, beam_size=beam, length_penalty=0.6, max_batch_size=64,
                                     batch_type="examples", max_decoding_length=31, min_decoding_length=0,
                                     max_input_length=0)
            seconds = time.perf_counter() - start
            tokens = sum(len(r.hypotheses[0]) for r in res)
            best = (tokens, seconds) if best is None or seconds < best[1] else best
        return best

    print("| model | decoder | precision | beam | threads | target tokens | seconds | target tok/s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for beam in (4, 1):
        for threads in (1, 2):
            for ours_p, ct2_q in (("fp32", "float32"), ("int8", "int8")):
                for name, fn, arg in (("dragoman", ours_run, ours_p), ("ctranslate2 " + ctranslate2.__version__,
                                                                        ct2_run, ct2_q)):
                    tokens, seconds = fn(arg, beam, threads)
                    print("| MarianMT base (random) | %s | %s | %d | %d | %d | %.2f | %.0f |"
                          % (name, ours_p, beam, threads, tokens, seconds, tokens / seconds), flush=True)


if __name__ == "__main__":
    main()
