#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/seeds/TARGET/) from the test fixtures.

Run from the repository root:  python3 fuzz/make_seeds.py DRAGOMAN_BINARY
The seeds are committed; this script says where each came from and remakes them. It needs the
`sentencepiece` module (PyPI) for the two small vocabularies, and a built `dragoman` for the model
and training-state seed (two updates of a tiny model on the BLEU fixtures).

The vocabularies use SentencePiece's identity normalisation: a vocabulary built by `dragoman
build-vocab` carries the 237 KB NFKC table, which would make every seed that holds one that
large (that table's parser is SentencePiece's own, fuzzed upstream).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import sentencepiece as spm

SEEDS = "fuzz/seeds"
FIX = "tests/fixtures"


def write(target, name, data):
    os.makedirs(os.path.join(SEEDS, target), exist_ok=True)
    with open(os.path.join(SEEDS, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def head(path, n):
    return b"".join(read(path).splitlines(keepends=True)[:n])


def vocabularies():
    text = read(f"{FIX}/bleu/en.ref") + read(f"{FIX}/bleu/de.ref")
    for kind in ("bpe", "unigram"):
        with tempfile.TemporaryDirectory() as tmp:
            corpus = os.path.join(tmp, "text")
            with open(corpus, "wb") as f:
                f.write(text)
            spm.SentencePieceTrainer.train(
                input=corpus, model_prefix=os.path.join(tmp, "m"), model_type=kind, vocab_size=100,
                character_coverage=0.98, normalization_rule_name="identity", pad_id=0, unk_id=1,
                bos_id=2, eos_id=3, pad_piece="<pad>", unk_piece="<unk>", bos_piece="<s>",
                eos_piece="</s>", minloglevel=2)
            write("fuzz_vocab", f"{kind}-100.model", read(os.path.join(tmp, "m.model")))


def model_and_state(dragoman):
    write("fuzz_safetensors", "python.safetensors", read(f"{FIX}/safetensors/python.safetensors"))
    for name in ("post_tied_only", "pre_untied_learned"):
        write("fuzz_safetensors", f"{name}.safetensors", read(f"{FIX}/model/{name}.safetensors"))
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "tiny.yaml")
        with open(config, "w") as f:
            f.write(
                "model: {encoder_layers: 1, decoder_layers: 1, d_model: 8, d_ff: 16, heads: 2, "
                "max_positions: 32, dropout: 0.0}\n"
                f"data: {{train_source: {FIX}/bleu/en.ref, train_target: {FIX}/bleu/en.hyp, "
                f"vocabulary: {SEEDS}/fuzz_vocab/bpe-100.model, max_length: 30}}\n"
                "training: {max_tokens: 64, max_steps: 2, warmup_steps: 1, threads: 1}\n"
                "checkpoint: {every_steps: 2}\n")
        run = os.path.join(tmp, "run")
        subprocess.run([dragoman, "train", "--config", config, "--run", run], check=True, capture_output=True)
        checkpoints = os.path.join(run, "checkpoints")
        write("fuzz_safetensors", "model-with-vocabulary.safetensors",
              read(os.path.join(checkpoints, "checkpoint-00000002.safetensors")))
        write("fuzz_safetensors", "train-state.safetensors",
              read(os.path.join(checkpoints, "checkpoint-00000002.state.safetensors")))


def configs():
    for name in ("demo", "tiny", "transformer-base", "wmt14-en-de"):
        write("fuzz_config", f"{name}.yaml", read(f"configs/{name}.yaml"))
    write("fuzz_config", "demo-overrides",
          read("configs/demo.yaml") + b"\0training.threads=1\nmodel.d_model=64\ndata.valid_source=\n")
    write("fuzz_config", "flow-lists", b"model: {heads: 4, d_model: 64}\ntraining: {devices: 'cpu:2', lr: 1e-3}\n")


def corpora():
    write("fuzz_corpus", "bleu-en-de", read(f"{FIX}/bleu/en.ref") + b"\0" + read(f"{FIX}/bleu/de.ref"))
    write("fuzz_corpus", "alignment.tsv", head(f"{FIX}/alignment/demo-en-de.tsv", 40))
    write("fuzz_corpus", "crlf", read(f"{FIX}/bleu/crlf.hyp") + b"\0" + read(f"{FIX}/bleu/crlf.ref"))
    write("fuzz_corpus", "zh", read(f"{FIX}/bleu/zh.hyp") + b"\0" + read(f"{FIX}/bleu/zh.ref"))


def bleu():
    for hyp, ref in (("de", "de"), ("en", "en"), ("fr", "fr"), ("zh", "zh"), ("crlf", "crlf"),
                     ("random", "random")):
        write("fuzz_score_bleu", hyp, head(f"{FIX}/bleu/{hyp}.hyp", 30) + b"\0" + head(f"{FIX}/bleu/{ref}.ref", 30))


def translate():
    write("fuzz_translate", "en", head(f"{FIX}/bleu/en.ref", 6))
    write("fuzz_translate", "mixed", "Grüße aus Köln\n\n中文で\t tabs  and   spaces \nx" * 2)
    write("fuzz_translate", "long", " ".join(["word"] * 80) + "\n")


def serve():
    requests = {
        "v1": {"text": ["a b", "c"], "model": "m", "n_best": 2, "word_scores": True, "alignment": "soft",
               "length_penalty": 1.0, "beam": 4},
        "v1-one": {"text": "Hello world."},
        "libre": {"q": "a\nb", "source": "en", "target": "de", "format": "text", "api_key": "k"},
        "libre-list": {"q": ["a", "b"], "source": "auto", "target": "de"},
    }
    for name, body in requests.items():
        write("fuzz_serve_api", name, json.dumps(body, ensure_ascii=False))
    write("fuzz_serve_api", "form", b"q\0Hello\0source\0en\0target\0de\0format\0text")


def torch_state_dict():
    """A torch.save file of two small tensors (one a strided view), written without torch: the
    pickle torch.save writes, from stand-ins for torch's storage class and tensor rebuild function
    (pickle records them by module and name only)."""
    import collections
    import io
    import pickle
    import struct
    import types
    import zipfile
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    class FloatStorage:
        pass

    def _rebuild_tensor_v2(*args):
        return args
    FloatStorage.__module__, _rebuild_tensor_v2.__module__ = "torch", "torch._utils"
    FloatStorage.__qualname__, _rebuild_tensor_v2.__qualname__ = "FloatStorage", "_rebuild_tensor_v2"
    torch.FloatStorage, utils._rebuild_tensor_v2, torch._utils = FloatStorage, _rebuild_tensor_v2, utils
    sys.modules["torch"], sys.modules["torch._utils"] = torch, utils

    class Tensor:
        def __init__(self, offset, size, stride):
            self.args = (offset, size, stride)

        def __reduce__(self):
            offset, size, stride = self.args
            return (_rebuild_tensor_v2, (storage, offset, size, stride, False, collections.OrderedDict()))

    storage = FloatStorage()

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", FloatStorage, "0", "cpu", 6) if obj is storage else None

    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(collections.OrderedDict(
        [("weight", Tensor(0, (2, 3), (3, 1))), ("transposed", Tensor(0, (3, 2), (1, 3)))]))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", buf.getvalue())
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/data/0", struct.pack("<6f", 1, 2, 3, 4, 5, 6))
        z.writestr("archive/version", "3\n")
    del sys.modules["torch"], sys.modules["torch._utils"]
    return out.getvalue()


def imports():
    for name in ("arrays.npz", "arrays-compressed.npz"):
        write("fuzz_import", "npz-" + name, b"\x00" + read(f"{FIX}/marian/{name}"))
    write("fuzz_import", "torch.bin", b"\x01" + torch_state_dict())
    write("fuzz_import", "calls-os-system.bin", b"\x01" + read(f"{FIX}/marian/calls-os-system.bin"))
    model_yml = (b"type: transformer\ndim-emb: 32\nenc-depth: 2\ndec-depth: 2\ntransformer-heads: 4\n"
                 b"transformer-dim-ffn: 64\ntransformer-ffn-activation: swish\ntransformer-preprocess: ''\n"
                 b"transformer-postprocess: dan\ntied-embeddings-all: true\ntransformer-tied-layers: []\n")
    write("fuzz_import", "model.yml", b"\x02" + model_yml)
    write("fuzz_import", "config.json", b"\x03" + read(f"{FIX}/marian/hf-tiny/config.json"))
    table = {"pieces": ["</s>", "<unk>", "\u2581a", "b", "<pad>"], "unk_id": 1, "eos_id": 0,
             "append_eos": True, "special": [0, 1, 4]}
    write("fuzz_import", "pieces.json", b"\x04" + json.dumps(table).encode())


def main():
    if len(sys.argv) != 2 or not shutil.which(sys.argv[1]):
        sys.exit("usage: python3 fuzz/make_seeds.py DRAGOMAN_BINARY")
    vocabularies()
    model_and_state(sys.argv[1])
    configs()
    corpora()
    bleu()
    translate()
    serve()
    imports()


if __name__ == "__main__":
    main()
