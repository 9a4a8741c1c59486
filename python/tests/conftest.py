"""Fixtures of the Python package's tests: a small model of a reversal task trained here by the
dragoman binary (as the command line's tests train theirs: a few seconds), its input lines, and
the binary for running the same translations through the command line."""

import os
import subprocess

import pytest


def binary():
    return os.environ["DRAGOMAN_BINARY"]


def write_reversal_corpus(prefix, lines, state):
    """tests/cli/expect.sh's write_reversal_corpus: the same lines for the same seed."""
    letters = "abcdefghij"
    with open(f"{prefix}.src", "w") as src, open(f"{prefix}.tgt", "w") as tgt:
        for i in range(lines):
            words = []
            for _ in range(3 + i % 5):
                state = (state * 1103515245 + 12345) % 2147483648
                words.append(letters[state // 65536 % 10])
            src.write(" ".join(words) + "\n")
            tgt.write(" ".join(reversed(words)) + "\n")




def train(directory, seed):
    prefix = os.path.join(directory, "train")
    write_reversal_corpus(prefix, 300, 7)
    config = os.path.join(directory, f"model{seed}.yaml")
    template = os.path.join(os.environ["DRAGOMAN_FIXTURES"], "reversal", "learning.yaml")
    with open(template) as f:
        text = f.read().replace("@PREFIX@", prefix).replace("@SEED@", str(seed)).replace("@VOCAB@", "25")
    with open(config, "w") as f:
        f.write(text)
    run = os.path.join(directory, f"run{seed}")
    subprocess.run([binary(), "train", "-c", config, "--run", run], check=True, capture_output=True)
    return os.path.join(run, "checkpoints", "checkpoint-last.safetensors")


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("dragoman"))


@pytest.fixture(scope="session")
def model(workdir):
    return train(workdir, 1)


@pytest.fixture(scope="session")
def second_model(workdir):
    return train(workdir, 2)


@pytest.fixture(scope="session")
def lines(workdir):
    """Input lines: the training corpus's first 40, an empty line, one longer than the model's positions."""
    with open(os.path.join(workdir, "train.src")) as f:
        out = [next(f).rstrip("\n") for _ in range(40)]
    return out[:20] + ["", "j i h g f e d c b a a b c d e f g h i j"] + out[20:]


def run_cli(*args, input_lines=None):
    """The binary's standard output for `args` (the input lines on its standard input)."""
    text = None if input_lines is None else "".join(line + "\n" for line in input_lines)
    result = subprocess.run([binary(), *args], input=text, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout
