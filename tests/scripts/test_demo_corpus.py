#!/usr/bin/env python3
"""scripts/demo-corpus.py (the demo corpus builder behind scripts/prepare-demo-data.sh) on the
hand-made fixtures in tests/fixtures/demo-corpus: a German .mo catalog (compiled from catalog.po),
Translation-de/-en indexes of three translated descriptions, and three lines of the Ding dictionary.
Checks what each reader extracts, the cleaning, the splits (no test source nor a template of it in
training), and that bad input stops with an error naming the file. Runs in well under a second.

    python3 tests/scripts/test_demo_corpus.py SOURCE_DIR
"""
import contextlib
import importlib.util
import io
import os
import sys
import tempfile

source = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
spec = importlib.util.spec_from_file_location("demo_corpus", os.path.join(source, "scripts", "demo-corpus.py"))
dc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dc)
fixtures = os.path.join(source, "tests", "fixtures", "demo-corpus")
mo_path = os.path.join(fixtures, "catalog.mo")

failures = 0
passes = 0


def check(name, condition, detail=""):
    global failures, passes
    if condition:
        passes += 1
    else:
        failures += 1
        print(f"FAIL {name}" + (f": {detail}" if detail else ""))


def error_of(function, *args):
    """The CorpusError message that function(*args) raises, or None."""
    try:
        function(*args)
    except dc.CorpusError as e:
        return str(e)
    return None


# --- the .mo reader and the cleaning of catalog strings ---
entries = dc.read_mo(mo_path)
check("header entry skipped", all(msgid for msgid, _ in entries))
check("context removed", ("Delete ~Cells", "Zellen ~löschen") in entries, entries)
check("plural entry gives its singular forms", ("one file was removed", "eine Datei wurde entfernt") in entries)
check("every entry read", len(entries) == 11, len(entries))  # msgfmt leaves out the untranslated one
pairs = list(dc.catalog_pairs(entries))
expected = {
    ("Delete Cells", "Zellen löschen"),                         # '~' accelerator
    ("Restart LibreOffice now.", "LibreOffice jetzt neu starten."),
    ("Open the file", "Datei öffnen"),                          # '_' accelerator
    ("Save as…", "Speichern unter …"),                          # '&' accelerator
    ("Bold text & more", "Fetter Text & mehr"),                 # markup and an entity
    ("one file was removed", "eine Datei wurde entfernt"),
    ("The document must be saved now.", "Das Dokument muss jetzt gespeichert werden."),
    ("Do you want to continue?", "Möchten Sie fortfahren?"),
    ("print what is done", "ausgeben, was getan wird"),         # a usage line's option column cut
}
check("catalog pairs", set(pairs) == expected,
      f"missing {expected - set(pairs)}, unexpected {set(pairs) - expected}")
check("placeholders dropped", not any("%" in en or "%" in de for en, de in pairs))
check("a string wrapped on one side only is dropped", not any("wrapped" in en for en, _ in pairs))
check("an untranslated entry is skipped", list(dc.catalog_pairs([("Not translated yet", "")])) == [])
check("two underscores are not accelerators", dc.clean_catalog_string("file_name and dir_name") == "file_name and dir_name")
check("a percent sign in text is kept", dc.clean_catalog_string("50 % of the page") == "50 % of the page")

with open(mo_path, "rb") as f:
    mo_bytes = f.read()
with tempfile.TemporaryDirectory() as tmp:
    def write(name, data):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    message = error_of(dc.read_mo, write("bad-magic.mo", b"\x00" * 4 + mo_bytes[4:]))
    check("a file that is not a .mo is an error naming it", message and "bad-magic.mo" in message
          and "not a gettext .mo file" in message, message)
    message = error_of(dc.read_mo, write("truncated.mo", mo_bytes[:len(mo_bytes) // 2]))
    check("a truncated .mo is an error naming it", message and "truncated.mo" in message and "truncated" in message,
          message)
    message = error_of(dc.read_mo, write("tiny.mo", b"\xde\x12\x04\x95"))
    check("a .mo shorter than its header is an error", message and "tiny.mo" in message, message)
    message = error_of(dc.read_mo, os.path.join(tmp, "missing.mo"))
    check("a missing file is an error naming it", message and "missing.mo" in message, message)

    # --- the Translation indexes ---
    de_index = dc.read_translation_index(os.path.join(fixtures, "Translation-de"), "de")
    en_index = dc.read_translation_index(os.path.join(fixtures, "Translation-en"), "en")
    check("index records", (len(de_index), len(en_index)) == (3, 4), (len(de_index), len(en_index)))
    pairs, missing = dc.description_pairs(de_index, en_index)
    check("every translation has its English", missing == 0)
    expected = [
        ("tool to frobnicate files", "Werkzeug zum Frobnizieren von Dateien"),
        ("Frobnicate reads files and frobnicates them, e.g. texts or images.",
         "Frobnicate liest Dateien und frobniziert sie, z. B. Texte oder Bilder."),  # no split after "z." or "e.g."
        ("It is fast.", "Es ist schnell."),
        ("This package contains the program.", "Dieses Paket enthält das Programm."),
        ("documentation for Frobnicate", "Dokumentation für Frobnicate"),
        ("Included are:", "Enthalten sind:"),
        ("the manual", "das Handbuch"),                                    # list items, trailing comma cut
        ("examples for the command line", "Beispiele für die Kommandozeile"),  # an item's continuation line
        ("a quick reference", "eine Kurzreferenz"),
        ("data for Frobnicate", "Daten für Frobnicate"),                # paragraphs differ: short only
    ]
    check("description pairs", pairs == expected, "\n  ".join(map(str, pairs)))

    bad = write("Translation-bad", b"Package: a\nDescription-md5: 1\nDescription-de: x\n\n y\n")
    message = error_of(dc.read_translation_index, bad, "de")
    check("a continuation line outside a record names file and line",
          message and "Translation-bad:5" in message and "continuation" in message, message)
    bad = write("Translation-nomd5", b"Package: a\nDescription-de: x\n")
    message = error_of(dc.read_translation_index, bad, "de")
    check("a record without Description-md5 names file and line",
          message and "Translation-nomd5:1" in message and "Description-md5" in message, message)
    message = error_of(dc.read_translation_index, os.path.join(fixtures, "Translation-en"), "de")
    check("an index of the wrong language is an error", message and "Description-de" in message, message)
    message = error_of(dc.read_translation_index, write("Translation-latin1", b"Package: \xe4\n"), "de")
    check("an index that is not UTF-8 is an error naming it", message and "Translation-latin1" in message, message)

    # --- the dictionary ---
    pairs = dc.dictionary_pairs(os.path.join(fixtures, "de-en"))
    check("dictionary sentences", pairs == [("The house is big.", "Das Haus ist groß."),
                                            ("He runs fast.", "Er läuft schnell.")], pairs)

    # --- de-duplication, templates and the splits ---
    check("template key drops copied words",
          dc.template_key("This package contains the Python 3 module for foo.",
                          "Dieses Paket enthält das Python-3-Modul für foo.") == "this package contains the module for")
    template = [(f"This package contains the data files for {name}.", f"Dieses Paket enthält die Datendateien für {name}.")
                for name in ("alpha", "beta", "gamma", "delta")]
    others = [(f"Sentence number {w} is here.", f"Satz Nummer {g} ist hier.")
              for w, g in (("one", "eins"), ("two", "zwei"), ("three", "drei"), ("four", "vier"), ("five", "fünf"),
                           ("six", "sechs"), ("seven", "sieben"), ("eight", "acht"), ("nine", "neun"))]
    sources = [("a", template + others[:5] + [others[0]]),  # a duplicate
               ("b", others[5:] + [("Kernel", "Kernel"), ("ls", "ls -l")])]  # a copy; unusable
    for n_test in range(1, 6):
        splits, counts = dc.build(sources, n_dev=1, n_test=n_test)
        train_keys = {dc.template_key(en, de) for en, de, _ in splits["train"]}
        held = splits["dev"] + splits["test"]
        check(f"{n_test}: split sizes", (len(splits["test"]), len(splits["dev"])) == (n_test, 1))
        check(f"{n_test}: no held-out template in train",
              not any(dc.template_key(en, de) in train_keys for en, de, _ in held))
        kept = len(splits["train"]) + len(held) + sum(c.get("held-out templates", 0) for c in counts.values())
        check(f"{n_test}: every distinct pair is somewhere", kept == 13, kept)
    check("duplicates counted", counts["a"]["usable"] == 10 and counts["a"]["new"] == 9, counts["a"])
    check("copies and unusable pairs dropped", counts["b"]["usable"] == 5 and counts["b"]["copies"] == 1, counts["b"])
    check("the split is deterministic", dc.build(sources, 1, 3) == dc.build(sources, 1, 3))
    check("too few sentences for the splits is an error", error_of(dc.build, sources, 5, 20) is not None)

    # --- the whole program ---
    out = os.path.join(tmp, "out")
    argv = ["--out", out, "--descriptions", os.path.join(fixtures, "Translation-de"),
            os.path.join(fixtures, "Translation-en"), "--catalog", mo_path,
            "--dictionary", os.path.join(fixtures, "de-en"), "--dev", "2", "--test", "3"]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = dc.main(argv)
    check("main exits 0", code == 0, stderr.getvalue())
    lines = {}
    for name in ("train", "dev", "test"):
        for lang in ("en", "de", "origin"):
            with open(os.path.join(out, f"{name}.{lang}"), encoding="utf-8") as f:
                lines[name, lang] = f.read().splitlines()
        check(f"{name}: aligned", len(lines[name, "en"]) == len(lines[name, "de"]) == len(lines[name, "origin"]))
        check(f"{name}: origins", set(lines[name, "origin"]) <= {"descriptions", "catalogs", "dictionary"})
    check("dev and test sizes", (len(lines["dev", "en"]), len(lines["test", "en"])) == (2, 3))
    check("train holds the rest", len(lines["train", "en"]) == 21 - 5, len(lines["train", "en"]))
    check("no test source in train", not set(lines["test", "en"]) & set(lines["train", "en"]))
    origin = dict(zip(lines["train", "en"], lines["train", "origin"]))
    check("origin of a pair", origin.get("The house is big.") == "dictionary" and origin.get("Delete Cells") == "catalogs"
          and origin.get("the manual") == "descriptions", origin)
    report = stdout.getvalue()
    check("counts printed per source", all(name in report for name in ("descriptions", "catalogs", "dictionary", "total")),
          report)

    stderr = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
        code = dc.main(["--out", out, "--catalog", mo_path, write("broken.mo", b"not a catalog at all, clearly")])
    check("bad input: exit 1 and the file named", code == 1 and "broken.mo" in stderr.getvalue(), stderr.getvalue())

print(f"{passes} passed, {failures} failed")
sys.exit(1 if failures else 0)
