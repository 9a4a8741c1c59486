"""dragoman.corpus_bleu, corpus_chrf and paper_bleu: sacreBLEU's scores to the last digit on the
score-bleu fixtures (tests/fixtures/bleu/expected.json holds sacreBLEU 2.5.1's own results), and
the command line's paper BLEU."""

import json
import os

import pytest

import dragoman
from conftest import run_cli

FIXTURES = os.path.join(os.environ["DRAGOMAN_FIXTURES"], "bleu")


def read(name):
    """A fixture's lines as score-bleu reads them: split at LF only, the last one with or without its LF."""
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def cases():
    with open(os.path.join(FIXTURES, "expected.json")) as f:
        return [c for c in json.load(f) if "corpus" in c]


@pytest.mark.parametrize("case", cases(), ids=lambda c: c["name"])
def test_sacrebleus_corpus_scores(case):
    hyps = read(case["hyp"])
    refs = [read(r) for r in case["refs"]]
    o = case["options"]
    if case["metric"] == "bleu":
        got = dragoman.corpus_bleu(hyps, refs, tokenize=o["tokenize"], lowercase=o["lowercase"],
                                   smooth_method=o["smooth_method"], smooth_value=o["smooth_value"])
    else:
        got = dragoman.corpus_chrf(hyps, refs, char_order=o["char_order"], word_order=o["word_order"], beta=o["beta"],
                                   lowercase=o["lowercase"], whitespace=o["whitespace"],
                                   eps_smoothing=o["eps_smoothing"])
    assert got["score"] == case["corpus"]["score"]
    assert got["signature"] == case["corpus"]["json"]["signature"] + "+dragoman"


def test_the_papers_bleu_is_score_bleus():
    hyps, refs = read("t2t.hyp"), read("t2t.ref")
    got = dragoman.paper_bleu(hyps, [refs], lang="de")
    cli = run_cli("score-bleu", "-i", os.path.join(FIXTURES, "t2t.hyp"), "-r", os.path.join(FIXTURES, "t2t.ref"),
                  "--paper", "de", "--json", "--width", "17")
    scores = [entry["score"] for entry in json.loads(cli)]
    assert round(got["score"], 17) in scores
    assert "moses-de" in got["signature"]


def test_bad_metric_input():
    with pytest.raises(ValueError, match=r"references\[0\] has 1 lines for 2 hypotheses"):
        dragoman.corpus_bleu(["a", "b"], [["a"]])
    with pytest.raises(TypeError, match="reference streams"):
        dragoman.corpus_bleu(["a"], ["a"])
    with pytest.raises(ValueError, match=r"threads must be an int in \[0, 1024\]"):
        dragoman.corpus_bleu(["a"], [["a"]], threads=100000)
    with pytest.raises(dragoman.Error, match="moses"):
        dragoman.corpus_bleu(["a"], [["a"]], tokenize="moses")
