#!/usr/bin/env python3
"""Generates the Transformer forward/loss fixtures in tests/fixtures/model/.

This is an independent numpy re-implementation of the model contract in docs/MODEL.md (parameter
names and shapes, embedding, positions, masked multi-head attention, FFN, post-/pre-norm, output
projection, label-smoothed loss). It shares no code with the C++ model in src/model/; the C++ tests
load each NAME.safetensors as a checkpoint, run the forward pass on the batch in NAME.json and
compare with the numbers stored there, so the tests themselves need no Python.

    pip install numpy safetensors && python3 tests/model/gen_model_fixtures.py tests/fixtures/model

Deterministic (a fixed numpy.random.default_rng seed per case): re-running writes byte-identical
files. The parameters are random float32 values (NOT the training initialisation: larger
matrices, non-zero biases, non-trivial layer norms, so that every term matters); all reference
arithmetic is float64 from those float32 values.

For each case NAME it writes
  * NAME.safetensors: exactly the F32 tensors docs/MODEL.md lists for the config, with
    __metadata__ {"format": "dragoman-model", "format_version": "1", "model_config": <compact JSON>};
  * NAME.json: {"case", "model_config", "src" [B, S], "src_lengths" [B], "tgt_in" [B, T],
    "tgt_out" [B, T], "tgt_lengths" [B], "loss_sum", "nll_sum", "tokens",
    "encoder_output" [B, S, D] (every position, padding ones included; only s < src_len is
    meaningful), "log_probs" [B, T, Vt] (every position; only t < tgt_len is meaningful)}.
    Floats are written with Python's repr, so they round-trip exactly to float64.

Before writing, every case is checked against a second, slow implementation (one sentence at a
time, without padding or masks, attention and softmax as scalar loops), every log-prob row must
exp-sum to 1, and the written safetensors file is read back with safetensors.numpy.load_file.
"""
import json
import math
import os
import struct
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

# ----------------------------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------------------------

CONFIG_KEYS = [
    "encoder_layers", "decoder_layers", "d_model", "d_ff", "heads", "d_k", "d_v", "dropout",
    "attention_dropout", "relu_dropout", "label_smoothing", "positions", "max_positions",
    "share_embeddings", "tie_output", "norm", "layer_norm_eps", "src_vocab_size",
    "tgt_vocab_size", "pad_id", "bos_id", "eos_id",
]


def make_config(**values):
    """The model_config object, keys in the order of CONFIG_KEYS; dropout is always 0 here."""
    defaults = {"dropout": 0.0, "attention_dropout": 0.0, "relu_dropout": 0.0,
                "layer_norm_eps": 1e-5, "pad_id": 0, "bos_id": 2, "eos_id": 3}
    merged = {**defaults, **values}
    assert set(merged) == set(CONFIG_KEYS), set(merged) ^ set(CONFIG_KEYS)
    return {key: merged[key] for key in CONFIG_KEYS}


# name -> (seed, config, source lengths [B], target lengths [B] (= sentence length + 1)).
# Each batch has a source of length 1, a target of length 1 (an empty sentence: BOS -> EOS), and
# different lengths in every row on both sides.
CASES = {
    "post_shared_tied": (
        1001,
        make_config(encoder_layers=2, decoder_layers=2, d_model=16, d_ff=32, heads=2, d_k=0,
                    d_v=0, label_smoothing=0.1, positions="sinusoidal", max_positions=32,
                    share_embeddings=True, tie_output=True, norm="post", src_vocab_size=23,
                    tgt_vocab_size=23),
        [7, 1, 4], [4, 6, 1]),
    "pre_untied_learned": (
        2002,
        make_config(encoder_layers=2, decoder_layers=2, d_model=12, d_ff=20, heads=3, d_k=6,
                    d_v=5, label_smoothing=0.2, positions="learned", max_positions=16,
                    share_embeddings=False, tie_output=False, norm="pre", src_vocab_size=19,
                    tgt_vocab_size=23),
        [1, 5, 7], [6, 1, 3]),
    "post_tied_only": (
        3003,
        make_config(encoder_layers=1, decoder_layers=3, d_model=8, d_ff=16, heads=2, d_k=0,
                    d_v=0, label_smoothing=0.0, positions="sinusoidal", max_positions=16,
                    share_embeddings=False, tie_output=True, norm="post", src_vocab_size=17,
                    tgt_vocab_size=13),
        [6, 7, 1], [1, 5, 6]),
}


def head_dims(cfg):
    """(K, Kv): d_k and d_v, where 0 means D / H."""
    d, h = cfg["d_model"], cfg["heads"]
    k = cfg["d_k"] or d // h
    kv = cfg["d_v"] or d // h
    if cfg["d_k"] == 0 or cfg["d_v"] == 0:
        assert d % h == 0
    return k, kv


# ----------------------------------------------------------------------------------------------
# Parameters: names and shapes of docs/MODEL.md, random values
# ----------------------------------------------------------------------------------------------

def attention_shapes(prefix, cfg):
    """(name, shape, kind) of one attention block and its layer norm."""
    d, h = cfg["d_model"], cfg["heads"]
    k, kv = head_dims(cfg)
    return [
        (f"{prefix}.q_proj.weight", (h * k, d), "matrix"), (f"{prefix}.q_proj.bias", (h * k,), "bias"),
        (f"{prefix}.k_proj.weight", (h * k, d), "matrix"), (f"{prefix}.k_proj.bias", (h * k,), "bias"),
        (f"{prefix}.v_proj.weight", (h * kv, d), "matrix"), (f"{prefix}.v_proj.bias", (h * kv,), "bias"),
        (f"{prefix}.out_proj.weight", (d, h * kv), "matrix"), (f"{prefix}.out_proj.bias", (d,), "bias"),
    ] + norm_shapes(f"{prefix}_norm", cfg)


def norm_shapes(prefix, cfg):
    d = cfg["d_model"]
    return [(f"{prefix}.weight", (d,), "norm_weight"), (f"{prefix}.bias", (d,), "bias")]


def ffn_shapes(prefix, cfg):
    d, f = cfg["d_model"], cfg["d_ff"]
    return [
        (f"{prefix}.ffn.fc1.weight", (f, d), "matrix"), (f"{prefix}.ffn.fc1.bias", (f,), "bias"),
        (f"{prefix}.ffn.fc2.weight", (d, f), "matrix"), (f"{prefix}.ffn.fc2.bias", (d,), "bias"),
    ] + norm_shapes(f"{prefix}.ffn_norm", cfg)


def parameter_shapes(cfg):
    """Every tensor that exists for cfg, as (name, shape, kind), in a fixed order."""
    d, p = cfg["d_model"], cfg["max_positions"]
    vs, vt = cfg["src_vocab_size"], cfg["tgt_vocab_size"]
    shapes = []
    if cfg["share_embeddings"]:
        assert vs == vt, "share_embeddings needs equal vocabularies"
        shapes.append(("embed.weight", (vt, d), "embedding"))
    else:
        shapes.append(("encoder.embed.weight", (vs, d), "embedding"))
        shapes.append(("decoder.embed.weight", (vt, d), "embedding"))
    if not cfg["tie_output"]:
        shapes.append(("output.weight", (vt, d), "matrix"))
    if cfg["positions"] == "learned":
        shapes.append(("encoder.positions.weight", (p, d), "embedding"))
        shapes.append(("decoder.positions.weight", (p, d), "embedding"))
    for i in range(cfg["encoder_layers"]):
        shapes += attention_shapes(f"encoder.layers.{i}.self_attn", cfg)
        shapes += ffn_shapes(f"encoder.layers.{i}", cfg)
    for i in range(cfg["decoder_layers"]):
        shapes += attention_shapes(f"decoder.layers.{i}.self_attn", cfg)
        shapes += attention_shapes(f"decoder.layers.{i}.cross_attn", cfg)
        shapes += ffn_shapes(f"decoder.layers.{i}", cfg)
    if cfg["norm"] == "pre":
        shapes += norm_shapes("encoder.final_norm", cfg)
        shapes += norm_shapes("decoder.final_norm", cfg)
    names = [name for name, _, _ in shapes]
    assert len(names) == len(set(names))
    return shapes


def random_parameters(cfg, rng):
    """name -> float32 array. Matrices [out, in] ~ N(0, 0.5/sqrt(in)), biases ~ N(0, 0.1),
    layer-norm weights ~ 1 + N(0, 0.1), embeddings and learned positions ~ N(0, 0.3)."""
    params = {}
    for name, shape, kind in parameter_shapes(cfg):
        if kind == "matrix":
            values = rng.normal(0.0, 0.5 / math.sqrt(shape[1]), size=shape)
        elif kind == "bias":
            values = rng.normal(0.0, 0.1, size=shape)
        elif kind == "norm_weight":
            values = 1.0 + rng.normal(0.0, 0.1, size=shape)
        else:
            assert kind == "embedding"
            values = rng.normal(0.0, 0.3, size=shape)
        params[name] = np.ascontiguousarray(values.astype(np.float32))
    return params


def embedding_names(cfg):
    """(source embedding, target embedding, output projection) parameter names."""
    src = "embed.weight" if cfg["share_embeddings"] else "encoder.embed.weight"
    tgt = "embed.weight" if cfg["share_embeddings"] else "decoder.embed.weight"
    out = tgt if cfg["tie_output"] else "output.weight"
    return src, tgt, out


# ----------------------------------------------------------------------------------------------
# Batch
# ----------------------------------------------------------------------------------------------

def make_batch(cfg, rng, src_lengths, tgt_lengths):
    """src [B, S], tgt_in [B, T], tgt_out [B, T] (int64), right-padded with pad_id."""
    pad, bos, eos = cfg["pad_id"], cfg["bos_id"], cfg["eos_id"]
    b, s, t = len(src_lengths), max(src_lengths), max(tgt_lengths)
    src = np.full((b, s), pad, dtype=np.int64)
    tgt_in = np.full((b, t), pad, dtype=np.int64)
    tgt_out = np.full((b, t), pad, dtype=np.int64)
    for i in range(b):
        src[i, :src_lengths[i]] = rng.integers(4, cfg["src_vocab_size"], size=src_lengths[i])
        sentence = rng.integers(4, cfg["tgt_vocab_size"], size=tgt_lengths[i] - 1).tolist()
        tgt_in[i, :tgt_lengths[i]] = [bos] + sentence
        tgt_out[i, :tgt_lengths[i]] = sentence + [eos]
    return src, tgt_in, tgt_out


# ----------------------------------------------------------------------------------------------
# Batched forward pass (float64)
# ----------------------------------------------------------------------------------------------

def sinusoidal_positions(length, d):
    """[length, D]: pos[t, 2i] = sin(t / 10000^(2i/D)), pos[t, 2i+1] = cos(same)."""
    assert d % 2 == 0
    t = np.arange(length, dtype=np.float64)[:, None]             # [L, 1]
    two_i = np.arange(0, d, 2, dtype=np.float64)[None, :]        # [1, D/2]
    angle = t / np.power(10000.0, two_i / d)                     # [L, D/2]
    pos = np.zeros((length, d))
    pos[:, 0::2] = np.sin(angle)
    pos[:, 1::2] = np.cos(angle)
    return pos


def embed(ids, table, positions_table, cfg):
    """ids [B, L] -> [B, L, D] = sqrt(D) * E[ids] + pos[0..L-1]."""
    d = cfg["d_model"]
    length = ids.shape[1]
    if positions_table is None:
        pos = sinusoidal_positions(length, d)                    # [L, D]
    else:
        pos = positions_table[:length]                           # [L, D]
    return math.sqrt(d) * table[ids] + pos[None, :, :]


def linear(x, w, b=None):
    """x [..., in], w [out, in], b [out] -> [..., out]."""
    y = x @ w.T
    return y if b is None else y + b


def layer_norm(x, w, b, eps):
    """Over the last axis, biased variance. x [..., D]."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def attention(p, prefix, x, m, key_lengths, causal, cfg):
    """Multi-head attention. x [B, Tq, D] (queries), m [B, Tk, D] (keys/values),
    key_lengths [B]: keys s >= key_lengths[b] are masked; causal: keys s > t are masked too."""
    h = cfg["heads"]
    k, kv = head_dims(cfg)
    bsz, tq, _ = x.shape
    tk = m.shape[1]
    q = linear(x, p[f"{prefix}.q_proj.weight"], p[f"{prefix}.q_proj.bias"])        # [B, Tq, H*K]
    kk = linear(m, p[f"{prefix}.k_proj.weight"], p[f"{prefix}.k_proj.bias"])       # [B, Tk, H*K]
    v = linear(m, p[f"{prefix}.v_proj.weight"], p[f"{prefix}.v_proj.bias"])        # [B, Tk, H*Kv]
    q = q.reshape(bsz, tq, h, k).transpose(0, 2, 1, 3)                             # [B, H, Tq, K]
    kk = kk.reshape(bsz, tk, h, k).transpose(0, 2, 1, 3)                           # [B, H, Tk, K]
    v = v.reshape(bsz, tk, h, kv).transpose(0, 2, 1, 3)                            # [B, H, Tk, Kv]
    scores = q @ kk.transpose(0, 1, 3, 2) / math.sqrt(k)                           # [B, H, Tq, Tk]
    s_idx = np.arange(tk)[None, None, :]                                           # [1, 1, Tk]
    keep = s_idx < np.asarray(key_lengths)[:, None, None]                          # [B, 1, Tk]
    keep = np.broadcast_to(keep, (bsz, tq, tk))                                    # [B, Tq, Tk]
    if causal:
        keep = keep & (s_idx <= np.arange(tq)[None, :, None])                      # [B, Tq, Tk]
    keep = keep[:, None, :, :]                                                     # [B, 1, Tq, Tk]
    assert keep.any(axis=-1).all(), "every query row needs at least one key"
    scores = np.where(keep, scores, -np.inf)
    e = np.where(keep, np.exp(scores - scores.max(axis=-1, keepdims=True)), 0.0)
    probs = e / e.sum(axis=-1, keepdims=True)                                      # [B, H, Tq, Tk]
    out = probs @ v                                                                # [B, H, Tq, Kv]
    out = out.transpose(0, 2, 1, 3).reshape(bsz, tq, h * kv)                       # [B, Tq, H*Kv]
    return linear(out, p[f"{prefix}.out_proj.weight"], p[f"{prefix}.out_proj.bias"])  # [B, Tq, D]


def ffn(p, prefix, x):
    """fc2(relu(fc1(x))). x [B, L, D] -> [B, L, D]."""
    hidden = np.maximum(linear(x, p[f"{prefix}.fc1.weight"], p[f"{prefix}.fc1.bias"]), 0.0)  # [B, L, F]
    return linear(hidden, p[f"{prefix}.fc2.weight"], p[f"{prefix}.fc2.bias"])


def sublayer(p, norm_prefix, x, fn, cfg):
    """post: LN(x + fn(x)); pre: x + fn(LN(x)). x [B, L, D]."""
    w, b, eps = p[f"{norm_prefix}.weight"], p[f"{norm_prefix}.bias"], cfg["layer_norm_eps"]
    if cfg["norm"] == "post":
        return layer_norm(x + fn(x), w, b, eps)
    assert cfg["norm"] == "pre"
    return x + fn(layer_norm(x, w, b, eps))


def final_norm(p, prefix, x, cfg):
    if cfg["norm"] == "pre":
        return layer_norm(x, p[f"{prefix}.final_norm.weight"], p[f"{prefix}.final_norm.bias"],
                          cfg["layer_norm_eps"])
    return x


def encode(p, src, src_lengths, cfg):
    """src [B, S] -> encoder output [B, S, D]."""
    src_embed, _, _ = embedding_names(cfg)
    x = embed(src, p[src_embed], p.get("encoder.positions.weight"), cfg)           # [B, S, D]
    for i in range(cfg["encoder_layers"]):
        pre = f"encoder.layers.{i}"
        x = sublayer(p, f"{pre}.self_attn_norm", x,
                     lambda y: attention(p, f"{pre}.self_attn", y, y, src_lengths, False, cfg), cfg)
        x = sublayer(p, f"{pre}.ffn_norm", x, lambda y: ffn(p, f"{pre}.ffn", y), cfg)
    return final_norm(p, "encoder", x, cfg)


def decode(p, tgt_in, tgt_lengths, enc, src_lengths, cfg):
    """tgt_in [B, T], enc [B, S, D] -> log-probabilities [B, T, Vt]."""
    _, tgt_embed, out_name = embedding_names(cfg)
    x = embed(tgt_in, p[tgt_embed], p.get("decoder.positions.weight"), cfg)        # [B, T, D]
    for i in range(cfg["decoder_layers"]):
        pre = f"decoder.layers.{i}"
        x = sublayer(p, f"{pre}.self_attn_norm", x,
                     lambda y: attention(p, f"{pre}.self_attn", y, y, tgt_lengths, True, cfg), cfg)
        x = sublayer(p, f"{pre}.cross_attn_norm", x,
                     lambda y: attention(p, f"{pre}.cross_attn", y, enc, src_lengths, False, cfg),
                     cfg)
        x = sublayer(p, f"{pre}.ffn_norm", x, lambda y: ffn(p, f"{pre}.ffn", y), cfg)
    x = final_norm(p, "decoder", x, cfg)                                           # [B, T, D]
    logits = linear(x, p[out_name])                                                # [B, T, Vt]
    return log_softmax(logits)


def log_softmax(logits):
    """Over the last axis."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def smoothed_loss(log_probs, tgt_out, tgt_lengths, cfg):
    """log_probs [B, T, V] -> (loss_sum, nll_sum, tokens) over t < tgt_len[b]."""
    eps, pad, v = cfg["label_smoothing"], cfg["pad_id"], cfg["tgt_vocab_size"]
    loss_sum, nll_sum = 0.0, 0.0
    for b, length in enumerate(tgt_lengths):
        for t in range(length):
            y = int(tgt_out[b, t])
            assert y != pad
            q = np.full(v, eps / (v - 1))                                          # [V]
            q[pad] = 0.0
            q[y] += 1.0 - eps
            loss_sum += -float(np.dot(q, log_probs[b, t]))
            nll_sum += -float(log_probs[b, t, y])
    return loss_sum, nll_sum, int(sum(tgt_lengths))


def forward(p, src, src_lengths, tgt_in, tgt_out, tgt_lengths, cfg):
    enc = encode(p, src, src_lengths, cfg)
    log_probs = decode(p, tgt_in, tgt_lengths, enc, src_lengths, cfg)
    loss_sum, nll_sum, tokens = smoothed_loss(log_probs, tgt_out, tgt_lengths, cfg)
    return enc, log_probs, loss_sum, nll_sum, tokens


# ----------------------------------------------------------------------------------------------
# Slow check: one unpadded sentence at a time, no masks, attention/softmax/loss as scalar loops
# ----------------------------------------------------------------------------------------------

def slow_positions(length, d, table):
    if table is not None:
        return [list(table[t]) for t in range(length)]
    return [[math.sin(t / 10000.0 ** (j / d)) if j % 2 == 0 else
             math.cos(t / 10000.0 ** ((j - 1) / d)) for j in range(d)] for t in range(length)]


def slow_layer_norm(vec, w, b, eps):
    n = len(vec)
    mean = math.fsum(vec) / n
    var = math.fsum((v - mean) ** 2 for v in vec) / n
    return [(vec[j] - mean) / math.sqrt(var + eps) * w[j] + b[j] for j in range(n)]


def slow_attention(p, prefix, xs, ms, causal, cfg):
    """xs: list of query vectors, ms: list of key/value vectors (all real, nothing masked
    except s > t when causal)."""
    h = cfg["heads"]
    k, kv = head_dims(cfg)
    q = [linear(np.array(x), p[f"{prefix}.q_proj.weight"], p[f"{prefix}.q_proj.bias"]) for x in xs]
    kk = [linear(np.array(m), p[f"{prefix}.k_proj.weight"], p[f"{prefix}.k_proj.bias"]) for m in ms]
    v = [linear(np.array(m), p[f"{prefix}.v_proj.weight"], p[f"{prefix}.v_proj.bias"]) for m in ms]
    outs = []
    for t in range(len(xs)):
        concat = []
        for head in range(h):
            keys = range(t + 1) if causal else range(len(ms))
            scores = [sum(q[t][head * k + j] * kk[s][head * k + j] for j in range(k)) / math.sqrt(k)
                      for s in keys]
            top = max(scores)
            weights = [math.exp(sc - top) for sc in scores]
            total = math.fsum(weights)
            for j in range(kv):
                concat.append(math.fsum(weights[n] / total * v[s][head * kv + j]
                                        for n, s in enumerate(keys)))
        outs.append(list(linear(np.array(concat), p[f"{prefix}.out_proj.weight"],
                                p[f"{prefix}.out_proj.bias"])))
    return outs


def slow_ffn(p, prefix, xs):
    outs = []
    for x in xs:
        hidden = [max(0.0, a) for a in linear(np.array(x), p[f"{prefix}.fc1.weight"], p[f"{prefix}.fc1.bias"])]
        outs.append(list(linear(np.array(hidden), p[f"{prefix}.fc2.weight"], p[f"{prefix}.fc2.bias"])))
    return outs


def slow_sublayer(p, norm_prefix, xs, fn, cfg):
    w, b, eps = p[f"{norm_prefix}.weight"], p[f"{norm_prefix}.bias"], cfg["layer_norm_eps"]
    if cfg["norm"] == "post":
        ys = fn(xs)
        return [slow_layer_norm([a + c for a, c in zip(x, y)], w, b, eps) for x, y in zip(xs, ys)]
    ys = fn([slow_layer_norm(x, w, b, eps) for x in xs])
    return [[a + c for a, c in zip(x, y)] for x, y in zip(xs, ys)]


def slow_embed(ids, table, pos_table, cfg):
    d = cfg["d_model"]
    pos = slow_positions(len(ids), d, pos_table)
    return [[math.sqrt(d) * table[i][j] + pos[t][j] for j in range(d)] for t, i in enumerate(ids)]


def slow_sentence(p, src, tgt_in, tgt_out, cfg):
    """One sentence (unpadded id lists) -> (encoder output, log-prob rows, loss, nll)."""
    src_embed, tgt_embed, out_name = embedding_names(cfg)
    eps = cfg["layer_norm_eps"]
    x = slow_embed(src, p[src_embed], p.get("encoder.positions.weight"), cfg)
    for i in range(cfg["encoder_layers"]):
        pre = f"encoder.layers.{i}"
        x = slow_sublayer(p, f"{pre}.self_attn_norm", x,
                          lambda y: slow_attention(p, f"{pre}.self_attn", y, y, False, cfg), cfg)
        x = slow_sublayer(p, f"{pre}.ffn_norm", x, lambda y: slow_ffn(p, f"{pre}.ffn", y), cfg)
    if cfg["norm"] == "pre":
        x = [slow_layer_norm(v, p["encoder.final_norm.weight"], p["encoder.final_norm.bias"], eps) for v in x]
    enc = x
    x = slow_embed(tgt_in, p[tgt_embed], p.get("decoder.positions.weight"), cfg)
    for i in range(cfg["decoder_layers"]):
        pre = f"decoder.layers.{i}"
        x = slow_sublayer(p, f"{pre}.self_attn_norm", x,
                          lambda y: slow_attention(p, f"{pre}.self_attn", y, y, True, cfg), cfg)
        x = slow_sublayer(p, f"{pre}.cross_attn_norm", x,
                          lambda y: slow_attention(p, f"{pre}.cross_attn", y, enc, False, cfg), cfg)
        x = slow_sublayer(p, f"{pre}.ffn_norm", x, lambda y: slow_ffn(p, f"{pre}.ffn", y), cfg)
    if cfg["norm"] == "pre":
        x = [slow_layer_norm(v, p["decoder.final_norm.weight"], p["decoder.final_norm.bias"], eps) for v in x]
    v_size, pad, ls = cfg["tgt_vocab_size"], cfg["pad_id"], cfg["label_smoothing"]
    rows, loss, nll = [], 0.0, 0.0
    for t, hvec in enumerate(x):
        logits = [math.fsum(hvec[j] * p[out_name][kk][j] for j in range(len(hvec))) for kk in range(v_size)]
        top = max(logits)
        log_z = top + math.log(math.fsum(math.exp(a - top) for a in logits))
        row = [a - log_z for a in logits]
        rows.append(row)
        y = tgt_out[t]
        for kk in range(v_size):
            q = (1.0 - ls) * (kk == y) + (ls / (v_size - 1) if kk != pad else 0.0)
            loss -= q * row[kk]
        nll -= row[y]
    return enc, rows, loss, nll


def check_against_slow(p, src, src_lengths, tgt_in, tgt_out, tgt_lengths, cfg, enc, log_probs,
                       loss_sum, nll_sum):
    tol = 1e-10
    slow_loss, slow_nll = 0.0, 0.0
    for b in range(len(src_lengths)):
        ls, lt = src_lengths[b], tgt_lengths[b]
        s_enc, s_rows, s_loss, s_nll = slow_sentence(
            p, src[b, :ls].tolist(), tgt_in[b, :lt].tolist(), tgt_out[b, :lt].tolist(), cfg)
        assert np.max(np.abs(np.array(s_enc) - enc[b, :ls])) < tol, "encoder output differs"
        assert np.max(np.abs(np.array(s_rows) - log_probs[b, :lt])) < tol, "log-probs differ"
        slow_loss += s_loss
        slow_nll += s_nll
    assert abs(slow_loss - loss_sum) < tol * max(1.0, abs(loss_sum)), (slow_loss, loss_sum)
    assert abs(slow_nll - nll_sum) < tol * max(1.0, abs(nll_sum)), (slow_nll, nll_sum)


def sanity_checks(log_probs, loss_sum, nll_sum, tokens, cfg):
    assert np.all(np.isfinite(log_probs))
    assert np.allclose(np.exp(log_probs).sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    eps = cfg["label_smoothing"]
    # loss = (1-eps) nll + (non-negative smoothing terms); with eps = 0 they are equal.
    assert loss_sum >= (1.0 - eps) * nll_sum - 1e-12
    if eps == 0.0:
        assert abs(loss_sum - nll_sum) < 1e-12 * tokens
    assert nll_sum > 0.0 and tokens > 0


# ----------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------

def compact_json(obj):
    return json.dumps(obj, separators=(",", ":"))


def write_safetensors(path, params, cfg):
    """save_file, then the header is made canonical: the Rust writer keeps __metadata__ in a hash
    map, so the order of its keys changes from run to run; they are re-written sorted (same
    bytes otherwise, same header length, so the data offsets do not move)."""
    metadata = {"format": "dragoman-model", "format_version": "1", "model_config": compact_json(cfg)}
    save_file(params, path, metadata=metadata)
    with open(path, "rb") as f:
        blob = f.read()
    (header_len,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + header_len].decode("utf-8"))
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    canonical = {"__metadata__": dict(sorted(header["__metadata__"].items())), **tensors}
    assert canonical == header
    text = json.dumps(canonical, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert len(text) == len(blob[8:8 + header_len].rstrip(b" "))
    text += b" " * (header_len - len(text))
    with open(path, "wb") as f:
        f.write(blob[:8] + text + blob[8 + header_len:])
    # Read back with the library itself.
    loaded = load_file(path)
    assert sorted(loaded) == sorted(params)
    for name, value in params.items():
        assert loaded[name].dtype == np.float32 and loaded[name].shape == value.shape
        assert np.array_equal(loaded[name], value)
    with safe_open(path, framework="numpy") as f:
        assert f.metadata() == metadata
        assert json.loads(f.metadata()["model_config"]) == cfg


def write_json(path, fields):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fields, f, indent=None)  # floats via repr: exact float64 round trip
        f.write("\n")
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == fields


def generate_case(name, seed, cfg, src_lengths, tgt_lengths, out_dir):
    rng = np.random.default_rng(seed)
    params32 = random_parameters(cfg, rng)
    src, tgt_in, tgt_out = make_batch(cfg, rng, src_lengths, tgt_lengths)
    assert max(src_lengths) <= cfg["max_positions"] and max(tgt_lengths) <= cfg["max_positions"]
    p = {k: v.astype(np.float64) for k, v in params32.items()}  # all arithmetic in float64

    enc, log_probs, loss_sum, nll_sum, tokens = forward(p, src, src_lengths, tgt_in, tgt_out,
                                                        tgt_lengths, cfg)
    sanity_checks(log_probs, loss_sum, nll_sum, tokens, cfg)
    check_against_slow(p, src, src_lengths, tgt_in, tgt_out, tgt_lengths, cfg, enc, log_probs,
                       loss_sum, nll_sum)

    write_safetensors(os.path.join(out_dir, f"{name}.safetensors"), params32, cfg)
    write_json(os.path.join(out_dir, f"{name}.json"), {
        "case": name,
        "model_config": cfg,
        "src": src.tolist(),
        "src_lengths": list(src_lengths),
        "tgt_in": tgt_in.tolist(),
        "tgt_out": tgt_out.tolist(),
        "tgt_lengths": list(tgt_lengths),
        "loss_sum": float(loss_sum),
        "nll_sum": float(nll_sum),
        "tokens": tokens,
        "encoder_output": enc.tolist(),
        "log_probs": log_probs.tolist(),
    })
    return loss_sum, nll_sum, tokens


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_model_fixtures.py OUTPUT_DIR   (e.g. tests/fixtures/model)")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name, (seed, cfg, src_lengths, tgt_lengths) in CASES.items():
        loss_sum, nll_sum, tokens = generate_case(name, seed, cfg, src_lengths, tgt_lengths, out_dir)
        print(f"{name}: loss_sum={loss_sum!r} nll_sum={nll_sum!r} tokens={tokens}")


if __name__ == "__main__":
    main()
