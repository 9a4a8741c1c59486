#!/usr/bin/env python3
"""Fine-tuning side by side: one MarianMT model fine-tuned on the same sentence pairs, with the same
batches, learning rate and number of updates, by Hugging Face transformers (a plain PyTorch loop, as
fine-tuning notebooks write it) and by Dragoman (dragoman convert, then dragoman train --init).
Prints both loss curves, their largest difference, and each tool's time per update and peak memory.

    python3 scripts/finetune-parity.py --dragoman build/src/dragoman \\
        --source data/demo/train.en --target data/demo/train.de --size opus --updates 30

Needs torch, transformers, sentencepiece and numpy (a test tool: Dragoman itself needs no Python).
The model is made here with transformers (save_pretrained), random as from MarianConfig, with an
OPUS-MT style vocabulary: a SentencePiece model per side trained on the first 20,000 lines, one
table of both (--size tiny: d_model 64, 2+2 layers, 4 heads, 500 pieces a side; opus: the shape of
the OPUS-MT models, d_model 512, 6+6 layers, 8 heads, d_ff 2048, 8,000 pieces a side).

So that both tools see exactly the same updates: every update is one batch of the same --pairs
sentence pairs (the first ones whose sides are 2-100 pieces, length ratio at most 2; Dragoman's
length filters off), no dropout, no label smoothing, Adam (0.9, 0.98, 1e-9) at a
constant learning rate from the first update, no clipping, fp32, the same number of threads.
transformers keeps MarianMT's final_logits_bias as a buffer it never trains, where Marian and Dragoman
train it (output.bias): by default Dragoman runs with training.freeze: output_bias, as transformers
does; with --train-bias the PyTorch side makes it a parameter and both train it. The sinusoidal
position tables, which transformers 5 leaves trainable, are fixed as in Marian and in older
transformers. Both give <pad>, the decoder's start, no gradient through its lookup (nn.Embedding's
padding_idx).
The loss compared is each update's (the mean negative log-likelihood per target token, EOS
included, of the batch before the update), which both write; it is not a sampled curve.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


# Runs a command and reports its peak resident memory: a child of this small process, so that the
# number is the command's own (a process forked from a large one starts with that one's peak).
RUNNER = ("import os, subprocess, sys\n"
          "p = subprocess.Popen(sys.argv[1:])\n"
          "_, status, usage = os.wait4(p.pid, 0)\n"
          "print('peak-rss-kib', usage.ru_maxrss, file=sys.stderr)\n"
          "sys.exit(os.waitstatus_to_exitcode(status))\n")


def measured(command):
    """(exit code, standard output, standard error without the runner's line, peak RSS in MiB)."""
    proc = subprocess.run([sys.executable, "-c", RUNNER] + command, capture_output=True, text=True)
    lines = proc.stderr.rstrip("\n").split("\n")
    peak = float(lines[-1].split()[1]) / 1024.0 if lines and lines[-1].startswith("peak-rss-kib") else float("nan")
    return proc.returncode, proc.stdout, "\n".join(lines[:-1]), peak


def read_lines(path, n):
    """The first n lines (None: all)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            out.append(line.rstrip("\n"))
            if len(out) == n:
                break
    return out


def make_model(out, sources, targets, size):
    import sentencepiece as spm
    import torch
    from transformers import MarianConfig, MarianMTModel

    pieces = {"tiny": 500, "opus": 8000}[size]
    tmp = tempfile.mkdtemp()
    for side, lines in (("source", sources), ("target", targets)):
        path = os.path.join(tmp, side + ".txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        spm.SentencePieceTrainer.train(input=path, model_prefix=os.path.join(tmp, side), vocab_size=pieces,
                                       model_type="unigram", character_coverage=1.0, bos_id=-1, eos_id=0,
                                       unk_id=1, pad_id=-1, minloglevel=2)
        shutil.copy(os.path.join(tmp, side + ".model"), os.path.join(out, side + ".spm"))
    vocab = {"</s>": 0, "<unk>": 1}
    for side in ("source", "target"):
        sp = spm.SentencePieceProcessor(model_file=os.path.join(out, side + ".spm"))
        for i in range(sp.get_piece_size()):
            piece = sp.id_to_piece(i)
            if not (sp.is_control(i) or sp.is_unknown(i)) and piece not in vocab:
                vocab[piece] = len(vocab)
    vocab["<pad>"] = len(vocab)
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"source_lang": "en", "target_lang": "de", "model_max_length": 512,
                   "tokenizer_class": "MarianTokenizer", "separate_vocabs": False}, f)
    shape = {"tiny": dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                          decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256),
             "opus": dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                          decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048)}[size]
    v, pad = len(vocab), vocab["<pad>"]
    torch.manual_seed(7)
    cfg = MarianConfig(vocab_size=v, decoder_vocab_size=v, activation_function="swish", max_position_embeddings=512,
                       scale_embedding=True, pad_token_id=pad, eos_token_id=0, decoder_start_token_id=pad,
                       forced_eos_token_id=0, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                       share_encoder_decoder_embeddings=True, tie_word_embeddings=True, **shape)
    model = MarianMTModel(cfg).eval()
    model.save_pretrained(out, safe_serialization=True)
    return pad


def select_pairs(tok, sources, targets, n):
    """The first n pairs whose sides are 2..100 pieces (with </s>) at a length ratio of at most 2
    (Dragoman's length filters off: every pair is kept)."""
    chosen = []
    for s, t in zip(sources, targets):
        ls = len(tok(s).input_ids)
        lt = len(tok(text_target=t).input_ids)
        if 2 <= ls <= 100 and 2 <= lt <= 100 and max(ls, lt) <= 2 * min(ls, lt):
            chosen.append((s, t))
            if len(chosen) == n:
                break
    if len(chosen) < n:
        sys.exit(f"finetune-parity: only {len(chosen)} usable pairs, --pairs {n}")
    return chosen


def torch_run(model_dir, work, updates, lr, threads, train_bias):
    """The transformers loop in a process of its own (its peak memory measured)."""
    code, out, err, peak = measured([sys.executable, os.path.abspath(__file__), "--torch-worker", model_dir, work,
                                     str(updates), repr(lr), str(threads), "1" if train_bias else "0"])
    if code != 0:
        sys.exit("finetune-parity: the transformers loop failed:\n" + err[-3000:])
    result = json.loads(out.strip().split("\n")[-1])
    return result["losses"], result["seconds"], result["tokens"], peak


def torch_worker(model_dir, work, updates, lr, threads, train_bias):
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    torch.set_num_threads(threads)
    pairs = list(zip(read_lines(os.path.join(work, "pairs.src"), None), read_lines(os.path.join(work, "pairs.tgt"), None)))
    tok = MarianTokenizer.from_pretrained(model_dir)
    model = MarianMTModel.from_pretrained(model_dir)
    if train_bias:  # a parameter, as Marian and Dragoman have it
        bias = model.final_logits_bias.detach().clone()
        del model._buffers["final_logits_bias"]
        model.final_logits_bias = torch.nn.Parameter(bias)
    # The sinusoidal positions are fixed (Marian's, and what convert writes); transformers 5 leaves
    # their table trainable.
    model.model.encoder.embed_positions.weight.requires_grad_(False)
    model.model.decoder.embed_positions.weight.requires_grad_(False)
    model.train()  # (every dropout is 0)
    enc = tok([s for s, _ in pairs], text_target=[t for _, t in pairs], return_tensors="pt", padding=True)
    labels = enc["labels"].masked_fill(enc["labels"] == model.config.pad_token_id, -100)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr, betas=(0.9, 0.98), eps=1e-9)
    losses, seconds = [], []
    for _ in range(updates):
        start = time.perf_counter()
        loss = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        seconds.append(time.perf_counter() - start)
        losses.append(loss.item())
    tokens = int((labels != -100).sum())
    print(json.dumps({"losses": losses, "seconds": seconds, "tokens": tokens}))


def dragoman_run(dragoman, model_dir, work, pairs, updates, lr, threads, train_bias):
    converted = os.path.join(work, "converted.safetensors")
    subprocess.run([dragoman, "convert", model_dir, "-o", converted, "--quiet"], check=True)
    config = os.path.join(work, "finetune.yaml")
    with open(config, "w") as f:
        f.write(f"""model:
  dropout: 0.0
  label_smoothing: 0.0
data:
  train_source: pairs.src
  train_target: pairs.tgt
  max_length: 200
  max_ratio: 0
training:
  max_tokens: 1000000
  update_freq: 1
  max_steps: {updates}
  lr: {lr!r}
  warmup_steps: 1
  lr_decay: constant
  log_every: 1
  threads: {threads}
  freeze: "{'' if train_bias else 'output_bias'}"
checkpoint:
  every_minutes: 0
""")
    run = os.path.join(work, "run")
    code, _, log, peak = measured([dragoman, "train", "-c", config, "--init", converted, "--run", run,
                                   "--no-progress", "--overwrite"])
    if code != 0:
        sys.exit("finetune-parity: dragoman train failed:\n" + log[-3000:])
    if f"training pairs: {len(pairs)} read, {len(pairs)} kept" not in log:
        sys.exit("finetune-parity: dragoman did not keep every pair:\n" + log[-3000:])
    records = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl")) if '"loss"' in line]
    losses = [r["loss"] for r in records]
    elapsed = [r["elapsed_s"] for r in records]
    seconds = [b - a for a, b in zip([0.0] + elapsed[:-1], elapsed)]
    return losses, seconds, peak


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        model_dir, work, updates, lr, threads, train_bias = sys.argv[2:8]
        torch_worker(model_dir, work, int(updates), float(lr), int(threads), train_bias == "1")
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dragoman", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--size", choices=["tiny", "opus"], default="tiny")
    ap.add_argument("--pairs", type=int, default=64)
    ap.add_argument("--updates", type=int, default=30)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--train-bias", action="store_true",
                    help="train the output bias on both sides (Marian's way; transformers keeps it fixed)")
    ap.add_argument("--keep", help="a directory for the model, the converted model and the run (default: temporary)")
    args = ap.parse_args()

    from transformers import MarianTokenizer

    work = args.keep or tempfile.mkdtemp(prefix="finetune-parity.")
    os.makedirs(work, exist_ok=True)
    model_dir = os.path.join(work, "marianmt")
    os.makedirs(model_dir, exist_ok=True)
    sources, targets = read_lines(args.source, 20000), read_lines(args.target, 20000)
    make_model(model_dir, sources, targets, args.size)
    pairs = select_pairs(MarianTokenizer.from_pretrained(model_dir), sources, targets, args.pairs)
    with open(os.path.join(work, "pairs.src"), "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s, _ in pairs))
    with open(os.path.join(work, "pairs.tgt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for _, t in pairs))

    t_losses, t_seconds, tokens, t_peak = torch_run(model_dir, work, args.updates, args.lr, args.threads,
                                                    args.train_bias)
    d_losses, d_seconds, d_peak = dragoman_run(args.dragoman, model_dir, work, pairs, args.updates, args.lr,
                                               args.threads, args.train_bias)
    if len(d_losses) != args.updates:
        sys.exit(f"finetune-parity: dragoman logged {len(d_losses)} updates, not {args.updates}")

    print(f"{args.size} MarianMT, {len(pairs)} pairs a batch ({tokens} target tokens with EOS), {args.updates} "
          f"updates at lr {args.lr:g}, {args.threads} threads, the output bias "
          f"{'trained' if args.train_bias else 'fixed (training.freeze: output_bias)'}")
    print(f"{'update':>6} {'transformers':>13} {'dragoman':>13} {'difference':>11}")
    for i, (a, b) in enumerate(zip(t_losses, d_losses)):
        print(f"{i + 1:>6} {a:>13.6f} {b:>13.6f} {b - a:>+11.2e}")
    worst = max(abs(a - b) for a, b in zip(t_losses, d_losses))
    relative = max(abs(a - b) / abs(a) for a, b in zip(t_losses, d_losses))
    print(f"largest difference: {worst:.3e} ({relative:.3e} of the loss); loss {t_losses[0]:.4f} -> "
          f"{t_losses[-1]:.4f} (transformers), {d_losses[0]:.4f} -> {d_losses[-1]:.4f} (dragoman)")
    # Time per update: the median, the first (warm-up) left out.
    median = lambda xs: sorted(xs[1:])[len(xs[1:]) // 2] if len(xs) > 1 else xs[0]
    print(f"{'tool':<13} {'s/update':>9} {'tgt tok/s':>10} {'peak RSS MiB':>13}")
    for name, secs, peak in (("transformers", t_seconds, t_peak), ("dragoman", d_seconds, d_peak)):
        print(f"{name:<13} {median(secs):>9.3f} {tokens / median(secs):>10.0f} {peak:>13.0f}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
