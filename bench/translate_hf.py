#!/usr/bin/env python3
"""The reference for `dragoman translate` speed: the same model file run by Hugging Face
transformers' MarianMT (the paper's post-norm Transformer) and its generate() loop, in PyTorch, on
a GPU or the CPU. A benchmark instrument, not a runtime dependency (scripts/bench-translate-gpu.sh).

    python3 bench/translate_hf.py --model M.safetensors --input in.en --output out.de
        [--device cuda:0|cpu] [--dtype fp32|bf16|fp16] [--beam 4] [--alpha 0.6]
        [--max-length-a 1 --max-length-b 50] [--batch-tokens 16384] [--batch-sentences 1024]
        [--threads N]

The model: Dragoman's file (docs/MODEL.md) mapped onto MarianMTModel, which computes the same
function for norm "post" (pre-norm files are refused): shared, tied embeddings scaled by sqrt(D);
Dragoman's interleaved sinusoids (or learned positions) written into Marian's position tables;
q/k/v/out projections, LN(x + sublayer(x)) with self_attn_norm -> self_attn_layer_norm,
cross_attn_norm -> encoder_attn_layer_norm, ffn_norm -> final_layer_norm; the logits' bias zero.
Decoding starts from BOS (Dragoman's first decoder input); <pad> and <s> are never generated.
`--check-greedy` on a trained model: greedy output must equal `dragoman translate --beam 1`'s.

The pipeline as Dragoman's: SentencePiece ids of each line (the file's own vocabulary, no BOS/EOS),
cut to max_positions; empty lines give empty output; batches as Dragoman makes them (sorted longest
first, at most --batch-tokens source tokens with padding and --batch-sentences sentences); each
batch one generate() call with max_new_tokens = L + 1 for its longest source (L = floor(a |x| + b),
at most max_positions - 1: Dragoman's cap, plus EOS), and each sentence held to its own L by a
logits processor that leaves only EOS once a hypothesis has L tokens (as Dragoman's search does), so
both do the same decoder steps.
Length normalisation is generate()'s, score / |Y|^alpha: Dragoman's `--length-normalization power`.

Prints, like Dragoman's summary: "hf: N lines, S source tokens, T target tokens (1-best) in X s: ..."
where X covers encoding, search and decoding (not loading the model), GPU work finished.
"""
import argparse
import json
import math
import sys
import time

import numpy as np
import sentencepiece as spm
import torch
from safetensors import safe_open
from safetensors.numpy import load_file
from transformers import LogitsProcessor, LogitsProcessorList, MarianConfig, MarianMTModel

VOCAB_TENSOR = "vocabulary.sentencepiece"


def dragoman_sinusoids(positions, d):
    """Dragoman's table (src/kernels/cpu/embedding.cpp): pos[t,2i] = sin(t/1e4^(2i/D)),
    pos[t,2i+1] = cos(...), t from 0, computed in float64 then rounded."""
    t = np.arange(positions, dtype=np.float64)[:, None]
    two_i = 2.0 * np.arange(d // 2, dtype=np.float64)[None, :]
    angle = t / np.power(10000.0, two_i / float(d))
    out = np.empty((positions, d), dtype=np.float64)
    out[:, 0::2] = np.sin(angle)
    out[:, 1::2] = np.cos(angle)
    return out.astype(np.float32)


def load_dragoman(path):
    with safe_open(path, "np") as f:
        metadata = f.metadata() or {}
    if metadata.get("format") != "dragoman-model":
        raise SystemExit("%s: not a Dragoman model file (format=%r)" % (path, metadata.get("format")))
    config = json.loads(metadata["model_config"])
    tensors = load_file(path)
    vocab = tensors.pop(VOCAB_TENSOR, None)
    if vocab is None:
        raise SystemExit("%s: no embedded vocabulary (%s)" % (path, VOCAB_TENSOR))
    return config, {k: v.astype(np.float32) for k, v in tensors.items()}, bytes(vocab.tobytes())


def marian_model(c, w):
    """A MarianMTModel with the Dragoman weights `w` for config `c`."""
    if c["norm"] != "post":
        raise SystemExit("translate_hf: norm %r: MarianMT is post-norm only" % c["norm"])
    # Imported models' options (docs/MODELS.md): not mapped here (convert's tests check those models
    # against transformers directly).
    for key, default in (("activation", "relu"), ("output_bias", False), ("sinusoids", "interleaved"),
                         ("scale_embeddings", True)):
        if c.get(key, default) != default:
            raise SystemExit("translate_hf: model_config %s = %r is not mapped (only %r)" % (key, c[key], default))
    heads, d = c["heads"], c["d_model"]
    if (c.get("d_k") or d // heads) * heads != d or (c.get("d_v") or d // heads) * heads != d:
        raise SystemExit("translate_hf: head sizes other than d_model / heads are not expressible in MarianMT")
    if c["src_vocab_size"] != c["tgt_vocab_size"]:
        raise SystemExit("translate_hf: MarianMT here needs one vocabulary for both sides")
    cfg = MarianConfig(
        vocab_size=c["tgt_vocab_size"], decoder_vocab_size=c["tgt_vocab_size"], d_model=d,
        encoder_layers=c["encoder_layers"], decoder_layers=c["decoder_layers"],
        encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=c["d_ff"], decoder_ffn_dim=c["d_ff"], activation_function="relu",
        max_position_embeddings=c["max_positions"], scale_embedding=True, dropout=0.0, attention_dropout=0.0,
        activation_dropout=0.0, pad_token_id=c["pad_id"], eos_token_id=c["eos_id"], bos_token_id=c["bos_id"],
        decoder_start_token_id=c["bos_id"], forced_eos_token_id=None, share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True)
    model = MarianMTModel(cfg).eval()
    t = lambda name: torch.from_numpy(w[name])  # noqa: E731

    with torch.no_grad():
        embed = w["embed.weight"] if "embed.weight" in w else w["encoder.embed.weight"]
        if "embed.weight" not in w and not np.array_equal(w["encoder.embed.weight"], w["decoder.embed.weight"]):
            raise SystemExit("translate_hf: separate source/target embeddings are not mapped")
        if "output.weight" in w and not np.array_equal(w["output.weight"], embed):
            raise SystemExit("translate_hf: an untied output projection is not mapped")
        model.model.shared.weight.copy_(torch.from_numpy(embed))
        model.model.encoder.embed_tokens.weight = model.model.shared.weight
        model.model.decoder.embed_tokens.weight = model.model.shared.weight
        model.lm_head.weight = model.model.shared.weight
        model.final_logits_bias.zero_()
        for side in ("encoder", "decoder"):
            table = (w[side + ".positions"] if side + ".positions" in w
                     else dragoman_sinusoids(c["max_positions"], d))
            model.model.get_submodule(side).embed_positions.weight.copy_(torch.from_numpy(table))
        pairs = [("self_attn", "self_attn"), ("self_attn_norm", "self_attn_layer_norm"),
                 ("ffn.fc1", "fc1"), ("ffn.fc2", "fc2"), ("ffn_norm", "final_layer_norm")]
        for side, layers in (("encoder", c["encoder_layers"]), ("decoder", c["decoder_layers"])):
            names = pairs + ([("cross_attn", "encoder_attn"), ("cross_attn_norm", "encoder_attn_layer_norm")]
                             if side == "decoder" else [])
            for i in range(layers):
                ours, theirs = "%s.layers.%d." % (side, i), model.model.get_submodule(side).layers[i]
                for src, dst in names:
                    module = theirs.get_submodule(dst)
                    if src.endswith("attn"):
                        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                            module.get_submodule(proj).weight.copy_(t(ours + src + "." + proj + ".weight"))
                            module.get_submodule(proj).bias.copy_(t(ours + src + "." + proj + ".bias"))
                    else:
                        module.weight.copy_(t(ours + src + ".weight"))
                        module.bias.copy_(t(ours + src + ".bias"))
    return model


class LengthCap(LogitsProcessor):
    """Only EOS for a hypothesis of a sentence that has its cap's number of tokens (rows are
    sentence-major: sentence b's hypotheses are rows b * beam ... b * beam + beam - 1)."""

    def __init__(self, caps, beam, eos):
        self.caps = caps.repeat_interleave(beam)
        self.eos = eos

    def __call__(self, input_ids, scores):
        generated = input_ids.shape[1] - 1  # after the start token
        done = self.caps <= generated
        if bool(done.any()):
            eos_scores = scores[done, self.eos].clone()
            scores[done] = -math.inf
            scores[done, self.eos] = eos_scores
        return scores


def dragoman_batches(lengths, batch_tokens, batch_sentences):
    """Dragoman's batching (decode/translator.cpp length_sorted_batches)."""
    order = [i for i in range(len(lengths)) if lengths[i] > 0]
    order.sort(key=lambda i: -lengths[i])  # stable, longest first
    batches = []
    for i in order:
        if (not batches or len(batches[-1]) >= batch_sentences
                or (len(batches[-1]) + 1) * lengths[batches[-1][0]] > batch_tokens):
            batches.append([])
        batches[-1].append(i)
    return batches


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--alpha", type=float, default=0.6, help="length penalty: score / |Y|^alpha")
    ap.add_argument("--max-length-a", type=float, default=1.0)
    ap.add_argument("--max-length-b", type=int, default=50)
    ap.add_argument("--batch-tokens", type=int, default=16384)
    ap.add_argument("--batch-sentences", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    ap.add_argument("--check-greedy", metavar="DRAGOMAN_OUTPUT",
                    help="exit 1 unless the output equals this file (dragoman translate --beam 1 on the same input)")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)

    t_load = time.perf_counter()
    c, w, vocab = load_dragoman(a.model)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
    with torch.device(a.device):  # built (and randomly initialised) on the device: fast for big
        model = marian_model(c, w).to(dtype=dtype)
    sp = spm.SentencePieceProcessor(model_proto=vocab)
    sync = torch.cuda.synchronize if a.device.startswith("cuda") else (lambda: None)
    sync()
    load_s = time.perf_counter() - t_load
    max_positions = c["max_positions"]

    def cap(n):  # Dragoman's L for a source of n tokens
        return max(0, min(int(math.floor(a.max_length_a * n + a.max_length_b)), max_positions - 1))

    start = time.perf_counter()
    with open(a.input, encoding="utf-8") as f:
        lines = [line.rstrip("\n").rstrip("\r") for line in f]
    sources = [sp.encode(line)[:max_positions] for line in lines]
    lengths = [len(s) for s in sources]
    hyps = [[] for _ in lines]
    never = [[c["pad_id"]], [c["bos_id"]]]
    with torch.inference_mode():
        for batch in dragoman_batches(lengths, a.batch_tokens, a.batch_sentences):
            longest = lengths[batch[0]]
            ids = torch.full((len(batch), longest), c["pad_id"], dtype=torch.long)
            for row, i in enumerate(batch):
                ids[row, :lengths[i]] = torch.tensor(sources[i])
            ids = ids.to(a.device)
            caps = torch.tensor([cap(lengths[i]) for i in batch], device=a.device)
            out = model.generate(input_ids=ids, attention_mask=ids != c["pad_id"], num_beams=a.beam,
                                 logits_processor=LogitsProcessorList([LengthCap(caps, a.beam, c["eos_id"])]),
                                 length_penalty=a.alpha, max_new_tokens=cap(longest) + 1, min_new_tokens=0,
                                 early_stopping=False, do_sample=False, num_return_sequences=1,
                                 bad_words_ids=never, no_repeat_ngram_size=0, repetition_penalty=None,
                                 forced_eos_token_id=None, forced_bos_token_id=None, use_cache=True)
            for row, i in enumerate(batch):
                tokens = out[row, 1:].tolist()  # after the start token (BOS)
                hyps[i] = tokens[:tokens.index(c["eos_id"])] if c["eos_id"] in tokens else \
                    [x for x in tokens if x != c["pad_id"]]
    sync()
    texts = [sp.decode(h) if h else "" for h in hyps]
    with open(a.output, "w", encoding="utf-8") as out:
        out.write("".join(text + "\n" for text in texts))
    seconds = time.perf_counter() - start
    src_tok = sum(lengths)
    tgt_tok = sum(len(h) for h in hyps)
    import transformers
    print("hf: model loaded in %.2f s; transformers %s, torch %s, %s %s, beam %d, alpha %g" %
          (load_s, transformers.__version__, torch.__version__, a.device, a.dtype, a.beam, a.alpha), file=sys.stderr)
    print("hf: %d lines, %d source tokens, %d target tokens (1-best) in %.2f s: %.1f lines/s, %.0f source tokens/s, "
          "%.0f target tokens/s" % (len(lines), src_tok, tgt_tok, seconds, len(lines) / seconds, src_tok / seconds,
                                    tgt_tok / seconds), file=sys.stderr)
    if a.check_greedy:
        with open(a.check_greedy, encoding="utf-8") as f:
            expected = [line.rstrip("\n") for line in f]
        differ = [i for i, (x, y) in enumerate(zip(texts, expected)) if x != y]
        if len(expected) != len(texts) or differ:
            print("hf: %d of %d lines differ from %s (first: line %s)" %
                  (len(differ), len(texts), a.check_greedy, differ[0] + 1 if differ else "count"), file=sys.stderr)
            return 1
        print("hf: all %d lines equal %s" % (len(texts), a.check_greedy), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
