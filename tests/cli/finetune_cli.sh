#!/usr/bin/env bash
# End-to-end checks of starting a run from a model file (train --init, training.init_from): a
# model trained on one reversal corpus fine-tuned on another with a config that has no model
# section (the architecture and vocabulary come from the model, no vocabulary is built), the
# constant schedule, freezing, a contradicting config, files that are not models, resuming (the
# checkpoints win, bit for bit as an uninterrupted run), averaging, and a converted MarianMT model
# (separate vocabularies, Swish, output bias) fine-tuned with its unknown tokens reported.
# Usage: finetune_cli.sh DRAGOMAN_BINARY MARIAN_FIXTURES_DIR
set -uo pipefail
dragoman=$1
fixtures=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

# tensors.py A B: "same NAME" or "differs NAME" for each parameter of two model files, and their
# metadata as "meta KEY VALUE" lines of B.
cat >"$tmp/tensors.py" <<'PY'
import json, struct, sys
def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    return meta, {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}
_, a = read(sys.argv[1])
meta, b = read(sys.argv[2])
for name in sorted(a):
    if not name.startswith("vocabulary."):
        print(("same " if a[name] == b[name] else "differs ") + name)
for key, value in sorted(meta.items()):
    print("meta", key, value)
PY

# The model to start from: 500 updates on corpus A (it learns the reversal).
write_reversal_corpus "$tmp/a" 300 1
write_learning_config "$tmp/a.yaml" "$tmp/a" 1 25
expect base 0 "train: done at step 500" -- "$dragoman" train -c "$tmp/a.yaml" --run "$tmp/base"
base=$tmp/base/checkpoints/checkpoint-00000500.safetensors
"$dragoman" decoding-defaults "$base" --beam 3 --length-penalty 1.5 --in-place 2>/dev/null

# Fine-tuning on corpus B: data, schedule and regularisation only.
write_reversal_corpus "$tmp/b" 200 7
head -n 20 "$tmp/b.src" >"$tmp/bdev.src"
head -n 20 "$tmp/b.tgt" >"$tmp/bdev.tgt"
cat >"$tmp/ft.yaml" <<YAML
model:  # (the regularisation only: the architecture is the model's)
  dropout: 0.0
  label_smoothing: 0.0
data:
  train_source: b.src
  train_target: b.tgt
  valid_source: bdev.src
  valid_target: bdev.tgt
  max_length: 10
training:
  max_tokens: 400
  max_steps: 40
  lr: 0.001
  warmup_steps: 5
  lr_decay: constant
  log_every: 10
  valid_every: 20
  threads: 1
checkpoint:
  every_steps: 20
  every_minutes: 0
YAML
expect init 0 "train: starting from the weights of $base; the optimizer and the schedule start afresh" -- \
  "$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/ft"
ft=$tmp/ft/checkpoints/checkpoint-00000040.safetensors
check init-no-vocabulary-built test ! -e "$tmp/ft/vocab.model"
check init-config-saved grep -q "init_from: \"$base\"" "$tmp/ft/config.yaml"
check init-architecture-saved grep -q "d_model: 32" "$tmp/ft/config.yaml"
# It starts where the model is: the first window's loss is already low (a fresh model's is about
# ln 25 = 3.2), and the constant schedule holds the peak after its warmup.
check init-starts-trained python3 - "$tmp/ft/metrics.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"lr"' in l]
assert [l["step"] for l in lines] == [10, 20, 30, 40], lines
assert lines[0]["loss"] < 1.0, lines[0]
assert all(l["lr"] == 0.001 for l in lines), [l["lr"] for l in lines]
PY
"$dragoman" translate -m "$ft" -i "$tmp/bdev.src" -o "$tmp/ft.txt" 2>"$tmp/ft-translate.log"
check init-translates test "$(wc -l <"$tmp/ft.txt")" -eq 20
check init-keeps-decoding-settings grep -q "beam 3, gnmt length normalisation alpha 1.5" "$tmp/ft-translate.log"
python3 "$tmp/tensors.py" "$base" "$ft" >"$tmp/ft.tensors"
check init-metadata grep -q "^meta init_from $base$" "$tmp/ft.tensors"
check init-trained grep -q "^differs decoder.layers.0.ffn.fc1.weight" "$tmp/ft.tensors"

# The run's checkpoints win over --init when it resumes; resuming is bit-exact.
expect init-resume 0 "the run's checkpoints win over training.init_from" -- \
  "$dragoman" train --run "$tmp/ft" --set training.max_steps=50
"$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/half" --set training.max_steps=20 2>/dev/null
expect init-resume-half 0 "resuming from step 20" -- "$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/half"
check init-resume-exact cmp "$ft" "$tmp/half/checkpoints/checkpoint-00000040.safetensors"

# Averaging the fine-tuned checkpoints keeps the recommended settings.
expect init-average 0 "" -- "$dragoman" average-checkpoints --run "$tmp/ft" --last 2 -o "$tmp/avg.safetensors"
expect init-average-settings 0 "beam 3, gnmt length normalisation alpha 1.5" -- \
  "$dragoman" translate -m "$tmp/avg.safetensors" -i "$tmp/bdev.src" -o "$tmp/avg.txt"

# Freezing: the frozen parameters are the model's bit for bit, the others trained.
expect freeze 0 "training.freeze embeddings,encoder: [0-9]+ tensors" -- "$dragoman" train -c "$tmp/ft.yaml" \
  --init "$base" --run "$tmp/frozen" --set training.freeze=embeddings,encoder
python3 "$tmp/tensors.py" "$base" "$tmp/frozen/checkpoints/checkpoint-00000040.safetensors" >"$tmp/frozen.tensors"
check freeze-embeddings grep -q "^same embed.weight$" "$tmp/frozen.tensors"
check freeze-encoder test -z "$(grep '^differs encoder\.' "$tmp/frozen.tensors")"
check freeze-encoder-listed grep -q "^same encoder.layers.0.ffn.fc1.weight" "$tmp/frozen.tensors"
check freeze-decoder-trained grep -q "^differs decoder.layers.1.ffn.fc2.weight" "$tmp/frozen.tensors"
expect freeze-unknown 1 "training.freeze: 'embedding' is not a part of the model \(a comma-separated list of embeddings, encoder, decoder, output_bias\)" -- \
  "$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/x" --set training.freeze=embedding
expect freeze-missing-group 1 "training.freeze encoder,output_bias: this model has no parameter in 'output_bias' \(its output layer has no bias" -- \
  "$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/x" --set training.freeze=encoder,output_bias
expect freeze-weight-decay 1 "training.freeze with training.weight_decay .*set weight_decay to 0" -- \
  "$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/x" --set training.freeze=decoder \
  --set training.weight_decay=0.01

# Freezing from a resume on: the moments the encoder had are dropped, so it stays bit for bit.
"$dragoman" train --run "$tmp/ft" --set training.max_steps=60 --set training.freeze=encoder 2>/dev/null
python3 "$tmp/tensors.py" "$tmp/ft/checkpoints/checkpoint-00000050.safetensors" \
  "$tmp/ft/checkpoints/checkpoint-00000060.safetensors" >"$tmp/resume-frozen.tensors"
check freeze-on-resume test -z "$(grep '^differs encoder\.' "$tmp/resume-frozen.tensors")"
check freeze-on-resume-trains grep -q "^differs decoder.layers.1.ffn.fc2.weight" "$tmp/resume-frozen.tensors"

# What the config may and may not say: the regularisation is its own, the architecture the model's.
expect dump-architecture 0 "d_model: 32" -- "$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/x" \
  --dump-config --set model.dropout=0.3
expect dump-regularisation 0 "dropout: 0.3" -- "$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/x" \
  --dump-config --set model.dropout=0.3
expect contradiction 1 "training.init_from $base: the config's model.d_model is 64, the model's 32 \(the architecture comes from the model: leave model.d_model out of the config\)" -- \
  "$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/x" --set model.d_model=64
expect agreeing-key 0 "d_model: 32" -- "$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/x" \
  --dump-config --set model.d_model=32
expect not-a-model 1 "b.src: not a valid safetensors file.*a Dragoman model file is expected.*dragoman convert" -- \
  "$dragoman" train -c "$tmp/ft.yaml" --init "$tmp/b.src" --run "$tmp/x"
expect missing-model 1 "config key training.init_from: no such file: $tmp/none.safetensors" -- \
  "$dragoman" train -c "$tmp/ft.yaml" --run "$tmp/x" --set "training.init_from=$tmp/none.safetensors"
expect with-vocabulary 1 "training.init_from and data.vocabulary: a model to start from brings its own vocabulary" -- \
  "$dragoman" train -c "$tmp/ft.yaml" --init "$base" --run "$tmp/x" --set "data.vocabulary=$tmp/base/vocab.model"
check no-run-written test ! -e "$tmp/x/checkpoints"

# A converted MarianMT model (separate source and target vocabularies with piece tables, Swish,
# an output bias, learned-free Marian positions) fine-tuned on a copy task: the loss falls, the
# checkpoints translate with the imported vocabulary and keep its origin and settings; tokens its
# vocabulary does not know are counted, not fatal.
expect convert-hf 0 "convert: wrote" -- "$dragoman" convert "$fixtures/hf-tiny" -o "$tmp/hf.safetensors"
cp "$fixtures/input.en" "$tmp/copy.src"
cp "$fixtures/input.en" "$tmp/copy.tgt"
printf '日本語の文 です\n' >>"$tmp/copy.src"
printf '日本語の文 です\n' >>"$tmp/copy.tgt"
cat >"$tmp/hf-ft.yaml" <<YAML
model:
  dropout: 0.0
  label_smoothing: 0.0
data:
  train_source: copy.src
  train_target: copy.tgt
  max_length: 60
training:
  max_tokens: 2000
  max_steps: 30
  lr: 0.01
  warmup_steps: 3
  lr_decay: constant
  log_every: 5
  threads: 1
checkpoint:
  every_steps: 30
  every_minutes: 0
YAML
expect hf-init 0 "the vocabulary does not know \(<unk>\)" -- "$dragoman" train -c "$tmp/hf-ft.yaml" \
  --init "$tmp/hf.safetensors" --run "$tmp/hf-ft"
hf_ft=$tmp/hf-ft/checkpoints/checkpoint-00000030.safetensors
check hf-loss-falls python3 - "$tmp/hf-ft/metrics.jsonl" <<'PY'
import json, sys
losses = [json.loads(l)["loss"] for l in open(sys.argv[1]) if '"lr"' in l]
assert len(losses) == 6 and losses[-1] < 0.6 * losses[0], losses
PY
python3 "$tmp/tensors.py" "$tmp/hf.safetensors" "$hf_ft" >"$tmp/hf.tensors"
check hf-output-bias-trained grep -q "^differs output.bias$" "$tmp/hf.tensors"
check hf-origin grep -q "^meta converted_from huggingface-marian$" "$tmp/hf.tensors"
check hf-settings grep -q "^meta decoding.beam " "$tmp/hf.tensors"
expect hf-translate 0 "25 lines" -- "$dragoman" translate -m "$hf_ft" -i "$tmp/copy.src" -o "$tmp/hf.txt"
expect hf-score 0 "25 sentence pairs" -- "$dragoman" score -m "$hf_ft" -s "$tmp/copy.src" -t "$tmp/copy.tgt" \
  -o "$tmp/hf-scores.txt"

# serve takes the fine-tuned model as it takes any: a translation over HTTP.
"$dragoman" serve -m "ft=$hf_ft" --port 0 --threads 1 >"$tmp/serve.log" 2>&1 &
serve_pid=$!
port=""
for ((i = 0; i < 300; i++)); do
  port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$tmp/serve.log")
  [[ -n $port ]] && break
  sleep 0.05
done
check serve-started test -n "$port"
code=$(curl -s -o "$tmp/serve.json" -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/translate" \
  -H 'Content-Type: application/json' -d "{\"text\": \"$(head -n 1 "$tmp/copy.src")\"}")
check serve-translates test "$code" = 200
check serve-answer grep -q '"model":"ft"' "$tmp/serve.json"
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null

# A converted Marian model whose target vocabulary was padded with placeholders the output bias
# rules out (-1e4: what convert writes when the target vocabulary is smaller than the source's):
# label smoothing would spread over them, so it is refused; without smoothing it trains.
python3 - "$tmp/hf.safetensors" "$tmp/placeholders.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
meta = header.pop("__metadata__")
tensors = {k: bytearray(data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}
table = json.loads(bytes(tensors["vocabulary.target.pieces"]).decode("utf-8"))
ids = [i for i in range(len(table["pieces"])) if i not in table["special"]][-3:]
for i in ids:
    table["pieces"][i] = f"<unused:{i}>"
    struct.pack_into("<f", tensors["output.bias"], 4 * i, -1e4)
tensors["vocabulary.target.pieces"] = bytearray(json.dumps(table).encode("utf-8"))
header["vocabulary.target.pieces"]["shape"] = [len(tensors["vocabulary.target.pieces"])]
out, offset = {"__metadata__": meta}, 0
for k in header:
    out[k] = dict(header[k], data_offsets=[offset, offset + len(tensors[k])])
    offset += len(tensors[k])
text = json.dumps(out).encode("utf-8")
text += b" " * (-len(text) % 8)
with open(sys.argv[2], "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(bytes(tensors[k]) for k in header))
PY
expect placeholders-smoothing 1 "3 of its [0-9]+ target ids are placeholders its output bias rules out.*set model.label_smoothing to 0" -- \
  "$dragoman" train -c "$tmp/hf-ft.yaml" --init "$tmp/placeholders.safetensors" --run "$tmp/ph" \
  --set model.label_smoothing=0.1
expect placeholders-no-smoothing 0 "train: done at step 2" -- "$dragoman" train -c "$tmp/hf-ft.yaml" \
  --init "$tmp/placeholders.safetensors" --run "$tmp/ph" --set training.max_steps=2

echo "finetune_cli: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
