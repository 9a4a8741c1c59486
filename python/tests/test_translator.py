"""dragoman.Translator and dragoman.Scorer against the command line on the same model and input:
the same JSON objects (text, scores, n-best lists, word scores, alignments), the same file output,
the model's settings as Python objects, errors as exceptions, and calls from several threads."""

import json
import os
import subprocess
import sys
import threading

import pytest

import dragoman
from conftest import run_cli


def cli_json(model, lines, *options):
    out = run_cli("translate", "-m", *model, "--output-format", "json", "--threads", "1", *options,
                  input_lines=lines)
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture(scope="module")
def translator(model):
    return dragoman.Translator(model, threads=1)


def test_defaults_are_the_command_lines(translator, model, lines):
    assert translator.translate_batch(lines) == cli_json([model], lines)


@pytest.mark.parametrize("python, cli", [
    (dict(beam=5, nbest=3), ["--beam", "5", "--nbest", "3"]),
    (dict(beam=2, word_scores=True, alignment="hard"), ["--beam", "2", "--word-scores", "--alignment", "hard"]),
    (dict(alignment="soft", attention_layer=1, attention_head=2),
     ["--alignment", "soft", "--attention-layer", "1", "--attention-head", "2"]),
    (dict(beam=1, length_normalization="power", length_penalty=1.0, max_length_a=0.5, max_length_b=3),
     ["--beam", "1", "--length-normalization", "power", "--length-penalty", "1", "--max-length-a", "0.5",
      "--max-length-b", "3"]),
    (dict(batch_sentences=3, word_reward=0.5), ["--batch-sentences", "3", "--word-reward", "0.5"]),
])
def test_options_as_the_command_lines(translator, model, lines, python, cli):
    assert translator.translate_batch(lines, **python) == cli_json([model], lines, *cli)


CHILD = """
import json, sys
import dragoman
model, options = sys.argv[1], json.loads(sys.argv[2])
lines = [line.rstrip("\\n") for line in sys.stdin]
translator = dragoman.Translator(model, threads=1, deterministic=options.pop("deterministic", False))
print(json.dumps(translator.translate_batch(lines, **options)))
"""


@pytest.mark.parametrize("python, cli", [
    (dict(sampling=True, nbest=2, temperature=0.7, top_k=5, seed=3),
     ["--sampling", "--nbest", "2", "--temperature", "0.7", "--top-k", "5", "--seed", "3"]),
    (dict(deterministic=True, beam=3), ["--deterministic", "--beam", "3"]),
])
def test_batch_invariant_calls_as_the_command_lines(model, lines, python, cli):
    # Batch-invariant products are process-wide (as in the binary): a process of its own.
    child = subprocess.run([sys.executable, "-c", CHILD, model, json.dumps(python)], capture_output=True, text=True,
                           input="".join(line + "\n" for line in lines), check=True)
    assert json.loads(child.stdout) == cli_json([model], lines, *cli)


def test_an_ensemble_as_the_command_line(model, second_model, lines):
    ensemble = dragoman.Translator([model, second_model], threads=1)
    got = ensemble.translate_batch(lines, nbest=2)
    assert got == cli_json([model, "-m", second_model], lines, "--nbest", "2")
    assert got != dragoman.Translator(model, threads=1).translate_batch(lines, nbest=2)


def test_prefixes_and_constraints_as_the_command_line(translator, model, lines, workdir):
    sentences = lines[:6]
    prefixes = ["", "d", "", "a b", "", ""]
    constraints = [[], ["c"], [], [], ["a", "b c"], []]
    prefix_file = os.path.join(workdir, "prefixes.txt")
    constraint_file = os.path.join(workdir, "constraints.txt")
    with open(prefix_file, "w") as f:
        f.writelines(p + "\n" for p in prefixes)
    with open(constraint_file, "w") as f:
        f.writelines("\t".join(c) + "\n" for c in constraints)
    got = translator.translate_batch(sentences, target_prefix=prefixes, constraints=constraints)
    assert got == cli_json([model], sentences, "--target-prefix", prefix_file, "--constraints", constraint_file)
    assert got[1]["translation"].startswith("d")
    assert "c" in got[1]["translation"].split()


def test_translate_file_writes_what_the_command_line_writes(translator, model, lines, workdir):
    source = os.path.join(workdir, "input.txt")
    with open(source, "w") as f:
        f.writelines(line + "\n" for line in lines)
    for python, cli in [({}, []), (dict(scores=True), ["--scores"]), (dict(nbest=2), ["--nbest", "2"]),
                        (dict(output_format="json", word_scores=True), ["--output-format", "json", "--word-scores"])]:
        output = os.path.join(workdir, "output.txt")
        totals = translator.translate_file(source, output, **python)
        with open(output) as f:
            assert f.read() == run_cli("translate", "-m", model, "--threads", "1", "-i", source, *cli)
        assert totals["lines"] == len(lines)
        assert totals["truncated_lines"] == 1


def test_the_models_settings(translator, model):
    info = translator.info
    assert info["files"] == [model]
    assert info["step"] == 500
    assert info["config"]["d_model"] == 32
    assert info["config"]["decoder_layers"] == 2
    assert info["target_vocabulary_size"] == 25
    assert info["decoding_defaults"] == {}
    assert info["threads"] == 1
    assert dragoman.defaults()["beam"] == 4
    assert dragoman.defaults()["length_penalty"] == 0.6
    assert dragoman.__version__ in dragoman.build_info()


def test_the_scorer_gives_translates_scores(translator, model, lines):
    sentences = [line for line in lines[:10] if line]
    found = translator.translate_batch(sentences)
    scorer = dragoman.Scorer(model, threads=1)
    scores = scorer.score(sentences, [r["translation"] for r in found])
    for r, s in zip(found, scores):
        assert s["log_prob"] == pytest.approx(r["log_prob"], abs=1e-4)
        assert sum(s["token_log_probs"]) == pytest.approx(s["log_prob"], abs=1e-9)
    normalized = scorer.score(sentences, [r["translation"] for r in found], normalize=True)
    for s, n in zip(scores, normalized):
        assert n["log_prob"] == pytest.approx(s["log_prob"] / len(s["token_log_probs"]))
    source = "\n".join(sentences) + "\n"
    target = "\n".join(r["translation"] for r in found) + "\n"
    with open(os.path.join(os.path.dirname(model), "s.txt"), "w") as f:
        f.write(source)
    with open(os.path.join(os.path.dirname(model), "t.txt"), "w") as f:
        f.write(target)
    cli = run_cli("score", "-m", model, "--threads", "1", "-s", os.path.join(os.path.dirname(model), "s.txt"), "-t",
                  os.path.join(os.path.dirname(model), "t.txt"))
    assert [float(line) for line in cli.split()] == [s["log_prob"] for s in scores]


def test_errors_are_exceptions(translator, model, workdir):
    with pytest.raises(FileNotFoundError, match="no-such-model"):
        dragoman.Translator(os.path.join(workdir, "no-such-model.safetensors"))
    not_a_model = os.path.join(workdir, "not-a-model.safetensors")
    with open(not_a_model, "w") as f:
        f.write("not a model")
    with pytest.raises(dragoman.Error, match="not-a-model"):
        dragoman.Translator(not_a_model)
    with pytest.raises(ValueError, match="deterministic=True is for the CPU"):
        dragoman.Translator(model, device="cuda:0", deterministic=True)
    with pytest.raises(ValueError, match="precision='int8' runs on the CPU"):
        dragoman.Translator(model, device="cuda:0", precision="int8")
    with pytest.raises(dragoman.Error, match="precision"):
        dragoman.Translator(model, precision="fp8")
    with pytest.raises(ValueError, match=r"beam must be an int in \[1, 1024\], got 0"):
        translator.translate_batch(["a b"], beam=0)
    with pytest.raises(ValueError, match="length_normalization must be 'gnmt', 'power' or 'none'"):
        translator.translate_batch(["a b"], length_normalization="gmnt")
    with pytest.raises(ValueError, match="nbest=3 is larger than the beam, 2"):
        translator.translate_batch(["a b"], beam=2, nbest=3)
    with pytest.raises(ValueError, match="give sampling=True too"):
        translator.translate_batch(["a b"], temperature=0.5)
    assert translator.translate_batch(["a b"], temperature=1.0) == translator.translate_batch(["a b"])  # the default
    with pytest.raises(ValueError, match="target_prefix must be a list of str"):
        translator.translate_batch(["a b"], target_prefix=[1])
    with pytest.raises(ValueError, match=r"max_length_a must be a number in \[0, 1000\]"):
        translator.translate_batch(["a b"], max_length_a=2000)
    with pytest.raises(ValueError, match="target_prefix: 1 entries for 2 sentences"):
        translator.translate_batch(["a b", "c"], target_prefix=["a"])
    with pytest.raises(TypeError, match="list of str"):
        translator.translate_batch("a b")
    with pytest.raises(ValueError, match=r"sentences\[1\] is not valid UTF-8 text: surrogates not allowed at position 2"):
        translator.translate_batch(["a", "a \udcff b"])  # a lone surrogate
    with pytest.raises(TypeError, match=r"sentences\[0\] must be a str, got bytes"):
        translator.translate_batch([b"a b"])
    bad = os.path.join(workdir, "bad-utf8.txt")
    with open(bad, "wb") as f:
        f.write(b"a b\nc \xff d\n")
    with pytest.raises(dragoman.Error, match=r"bad-utf8.txt:2.*UTF-8"):
        translator.translate_file(bad, os.path.join(workdir, "never.txt"))
    assert not os.path.exists(os.path.join(workdir, "never.txt"))  # nothing half-written
    assert translator.translate_file(bad, os.path.join(workdir, "replaced.txt"), replace_invalid=True)[
        "replaced_lines"] == 1
    with pytest.raises(dragoman.Error, match="no-such-input"):
        translator.translate_file(os.path.join(workdir, "no-such-input.txt"), os.path.join(workdir, "x.txt"))
    with pytest.raises(ValueError, match="sources but"):
        dragoman.Scorer(model).score(["a"], ["a", "b"])


def test_one_translator_from_several_threads(model, lines):
    translator = dragoman.Translator(model, threads=2)  # oneDNN's products on two OpenMP threads too
    expected = translator.translate_batch(lines, beam=3)
    results = [None] * 6
    errors = []

    def work(i):
        try:
            results[i] = translator.translate_batch(lines, beam=3)
        except Exception as e:  # reported below: a thread's exception would otherwise be lost
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert all(r == expected for r in results)


def test_translators_of_their_own_in_several_threads(model, second_model, lines):
    threads = {model: 1, second_model: 2}  # and two thread counts (oneDNN's primitives are made for one)
    expected = {m: dragoman.Translator(m, threads=threads[m]).translate_batch(lines) for m in (model, second_model)}
    results, errors = {}, []

    def work(m, i):
        try:
            results[(m, i)] = dragoman.Translator(m, threads=threads[m]).translate_batch(lines)
        except Exception as e:
            errors.append(e)

    workers = [threading.Thread(target=work, args=(m, i)) for m in (model, second_model) for i in range(2)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert errors == []
    assert len(results) == 4
    assert all(r == expected[m] for (m, _), r in results.items())
