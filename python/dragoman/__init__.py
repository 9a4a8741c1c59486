"""Dragoman from Python: translation, force scoring and sacreBLEU-exact BLEU and chrF.

The same library as the ``dragoman`` command: a ``Translator`` translates as ``dragoman translate``
does, with the same defaults (the model file's recommended settings first, then the paper's: beam
4, GNMT length penalty 0.6, at most source length + 50 tokens), and its results are the fields of
``translate --output-format json``. See docs/PYTHON.md.

    import dragoman
    translator = dragoman.Translator("model.safetensors")
    for r in translator.translate_batch(["Hello world.", "How are you?"]):
        print(r["translation"], r["score"])
"""

import os

from . import _core
from ._core import Error, build_info

__version__ = _core.__version__
__all__ = ["Translator", "Scorer", "Error", "corpus_bleu", "corpus_chrf", "paper_bleu", "defaults", "build_info"]


def defaults():
    """The defaults of every option (a dict): the library's own, which the command line takes too."""
    return _core.default_options()


def _model_files(model):
    files = [model] if isinstance(model, (str, os.PathLike)) else list(model)
    files = [os.fspath(f) for f in files]
    for f in files:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"model file not found: {f}")
    return files


def _sentences(sentences, what="sentences"):
    """A list of str, each valid UTF-8 text (a lone surrogate is not): errors name the entry."""
    if isinstance(sentences, str):
        raise TypeError(f"{what} must be a list of str, not one str")
    out = list(sentences)
    for i, s in enumerate(out):
        if not isinstance(s, str):
            raise TypeError(f"{what}[{i}] must be a str, got {type(s).__name__}")
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"{what}[{i}] is not valid UTF-8 text: {e.reason} at position {e.start}") from None
    return out


def _given(options):
    return {key: value for key, value in options.items() if value is not None}


class Translator:
    """A model file (or a list of them: an ensemble) loaded for translation.

    device: "cpu" or "cuda:N"; precision: "fp32", "bf16", "fp16" or "int8" (the CPU); threads: the
    CPU threads a call uses (0: OMP_NUM_THREADS, else all cores); shortlist: a vocabulary shortlist
    file (``dragoman build-shortlist``); deterministic: batch-invariant output on the CPU, as
    ``translate --deterministic`` (process-wide from then on, as sampling on the CPU makes it too).
    One call runs at a time: calls from several Python threads wait for each other, and the GIL is
    released while a call runs.
    """

    def __init__(self, model, device="cpu", precision="fp32", threads=0, shortlist=None, deterministic=False):
        if deterministic and device != "cpu":
            raise ValueError("deterministic=True is for the CPU (on a GPU, cuBLASLt may choose another algorithm "
                             "for another batch size)")
        if shortlist is not None and not os.path.isfile(shortlist):
            raise FileNotFoundError(f"shortlist file not found: {shortlist}")
        self._impl = _core.Translator(_model_files(model), device, precision, int(threads), shortlist or "",
                                      bool(deterministic))

    @property
    def info(self):
        """The first model file's config, step, metadata, recommended decoding settings and vocabulary sizes."""
        return self._impl.info()

    def translate_batch(self, sentences, *, beam=None, length_penalty=None, length_normalization=None,
                        word_reward=None, max_length_a=None, max_length_b=None, nbest=None, sampling=None,
                        temperature=None, top_k=None, top_p=None, seed=None, noise=None, target_prefix=None,
                        constraints=None, word_scores=None, alignment=None, attention_layer=None,
                        attention_head=None, batch_tokens=None, batch_sentences=None):
        """Translates a list of sentences; returns one dict a sentence, in order.

        Each dict holds translate's JSON fields: "translation", "log_prob", "score", "tokens" and,
        when asked, "nbest" (nbest=N), "word_scores" and "alignment". None means the default
        (``dragoman.defaults()``; beam and length settings: the model file's, else the paper's).
        target_prefix: one str a sentence (the text its translation starts with, "" for none);
        constraints: one list of phrases a sentence. alignment: "hard", "soft" or True (hard).
        """
        options = _given(locals())
        del options["self"], options["sentences"]
        return self._impl.translate_batch(_sentences(sentences), options)

    def translate_file(self, input, output, *, beam=None, length_penalty=None, length_normalization=None,
                       word_reward=None, max_length_a=None, max_length_b=None, nbest=None, sampling=None,
                       temperature=None, top_k=None, top_p=None, seed=None, noise=None, target_prefix=None,
                       constraints=None, word_scores=None, alignment=None, attention_layer=None,
                       attention_head=None, batch_tokens=None, batch_sentences=None, scores=None,
                       output_format=None, chunk_lines=None, replace_invalid=None):
        """Translates a text file into another, as ``dragoman translate -i INPUT -o OUTPUT`` does.

        Streams the input in chunks; the output is written atomically (it appears, complete, at the
        end; "-" is standard output). target_prefix and constraints are files here, one line a line
        of input. output_format: "text" or "json". Returns the totals: lines, source_tokens,
        target_tokens, truncated_lines, replaced_lines.
        """
        options = _given(locals())
        for key in ("self", "input", "output"):
            del options[key]
        return self._impl.translate_file(os.fspath(input), os.fspath(output), options)


class Scorer:
    """Force decoding (``dragoman score``): the log-probability of given translations under a model or an ensemble."""

    def __init__(self, model, device="cpu", precision="fp32", threads=0):
        self._impl = _core.Scorer(_model_files(model), device, precision, int(threads))

    @property
    def info(self):
        return self._impl.info()

    def score(self, sources, targets, *, normalize=False, batch_tokens=0, batch_sentences=0):
        """One dict a pair: "log_prob" (divided by the target's tokens and EOS with normalize=True)
        and "token_log_probs" (each target piece's, then EOS's)."""
        return self._impl.score(_sentences(sources, "sources"), _sentences(targets, "targets"), bool(normalize),
                                int(batch_tokens),
                                int(batch_sentences))


def _streams(references):
    if references and isinstance(references[0], str):
        raise TypeError("references must be a list of reference streams (lists of str), as sacrebleu's")
    return [list(stream) for stream in references]


def corpus_bleu(hypotheses, references, *, tokenize="13a", lowercase=False, smooth_method="exp",
                smooth_value=None, threads=0):
    """sacreBLEU's corpus BLEU, to the last digit: a dict of score, name, signature, verbose, details.

    references: a list of reference streams, each one line a hypothesis (sacrebleu.corpus_bleu's shape).
    """
    return _core.corpus_bleu(list(hypotheses), _streams(references), tokenize, lowercase, smooth_method,
                             smooth_value, threads)


def corpus_chrf(hypotheses, references, *, char_order=6, word_order=0, beta=2, lowercase=False,
                whitespace=False, eps_smoothing=False, threads=0):
    """sacreBLEU's chrF (word_order=2: chrF++), the same dict as corpus_bleu."""
    return _core.corpus_chrf(list(hypotheses), _streams(references), char_order, word_order, beta, lowercase,
                             whitespace, eps_smoothing, threads)


def paper_bleu(hypotheses, references, *, lang="de", split_compounds=None, normalize_punctuation=None,
               aggressive_dashes=False, threads=0):
    """The paper's tokenized BLEU (``score-bleu --paper LANG``); compounds split and punctuation
    normalised for German unless told (None)."""
    return _core.paper_bleu(list(hypotheses), _streams(references), lang, split_compounds, normalize_punctuation,
                            aggressive_dashes, threads)
