#!/usr/bin/env python3
"""The documented options against each subcommand's --help, so that they cannot drift apart.

For each table of options in docs/ (rows that start with an option: | `-b, --beam K` | ...), under
the heading of its subcommand, every option named must be one the subcommand's --help lists, and a
default the row states ("default 4", "`13a` (default)", "default 1 and 50" for a row of two
options) must be the default --help shows. It cannot check what a row does not say.
    Usage: test_help_defaults.py REPO DRAGOMAN
"""
import re
import subprocess
import sys

# (file, heading) of each table -> the subcommand it documents.
TABLES = {
    ("docs/DECODING.md", "## The command"): "translate",
    ("docs/DECODING.md", "## Scoring given translations"): "score",
    ("docs/DECODING.md", "## Vocabulary shortlists"): "build-shortlist",
    ("docs/BLEU.md", "## The command"): "score-bleu",
    ("docs/SERVE.md", "## Options"): "serve",
    ("docs/TRAINING.md", "# Training"): "train",
    ("docs/TRAINING.md", "### Building a vocabulary by hand: `dragoman build-vocab`"): "build-vocab",
}
GLOBAL = {"--log-level", "--quiet", "-q", "--help", "-h", "--version"}


def help_options(dragoman, sub):
    """{option name: default or None} from `dragoman SUB --help`."""
    text = subprocess.run([dragoman, sub, "--help"], capture_output=True, text=True, check=True).stdout
    options, entries = {}, []  # entries: [names, default, description]
    for line in text.splitlines():
        m = re.match(r"^\s+((?:-[-\w]+,?)+)", line)
        if not m:
            if entries and line.startswith("    "):
                entries[-1][2] += " " + line.strip()  # the description, on the next line
            continue
        names = m.group(1).rstrip(",").split(",")
        # "-b,--beam INT:INT from 1 to 1024=4   Beam size...": the default follows the last '=' of the
        # first column (columns are two or more spaces apart).
        columns = re.split(r"\s{2,}", line.strip(), maxsplit=1)
        first = columns[0]
        default = first.rsplit("=", 1)[1].split()[0] if "=" in first[len(m.group(1)):] else None  # "=bleu ..."
        entries.append([names, default, columns[1] if len(columns) > 1 else ""])
    for names, default, description in entries:
        if default is None:  # a default that depends on something: the description states it
            d = re.search(r"\(default:? ([^\s,;)]+)", description)
            default = d.group(1) if d else None
        for name in names:
            options[name] = default
    return options


def doc_rows(path, heading):
    """(line number, [option names], description) of the option rows of the table under `heading`
    (the first table of the file when None)."""
    lines = open(path, encoding="utf-8").read().splitlines()
    start = 0
    if heading is not None:
        start = next(i for i, line in enumerate(lines) if line.strip() == heading)
    rows, in_table = [], False
    for i in range(start, len(lines)):
        line = lines[i]
        if line.startswith("|"):
            in_table = True
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if len(cells) >= 2 and cells[0].startswith("`-"):
                names = re.findall(r"(--?[A-Za-z][-\w]*)", " ".join(re.findall(r"`([^`]*)`", cells[0])))
                rows.append((i + 1, names, cells[1]))
        elif in_table:
            break
    return rows


def stated_defaults(names, description):
    """{name: default} for the defaults the row states."""
    value = r"(`[^`]+`|-?[0-9][0-9.e+-]*)"  # a number or a `value`: words ("the last layer") are not compared
    m = re.search(r"default " + value + r" and " + value, description)
    if m and len(names) == 2:
        return {names[0]: m.group(1), names[1]: m.group(2)}
    m = re.search(r"`([^`]+)` \(default[,)]", description)
    if m:
        return {names[0]: m.group(1)}
    m = re.search(r"\(default:? " + value, description)
    if m:
        return {names[0]: m.group(1).rstrip(".")}
    return {}


def same(doc, helped):
    if helped is None:
        return False
    a, b = doc.strip("`'\""), helped.strip("'\"")
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b


def main():
    repo, dragoman = sys.argv[1], sys.argv[2]
    problems, checked = [], 0
    helps = {}
    for (path, heading), sub in TABLES.items():
        if sub not in helps:
            helps[sub] = help_options(dragoman, sub)
        options = helps[sub]
        rows = doc_rows(f"{repo}/{path}", heading)
        if not rows:
            problems.append(f"{path}: no option table under {heading or 'the top'} (for {sub})")
        for line, names, description in rows:
            for name in names:
                if name not in options and name not in GLOBAL:
                    problems.append(f"{path}:{line}: {name} is not an option of `dragoman {sub}`")
            for name, default in stated_defaults(names, description).items():
                checked += 1
                if not same(default, options.get(name)):
                    problems.append(f"{path}:{line}: {name}: the docs say default {default}, "
                                    f"`dragoman {sub} --help` says {options.get(name)}")
    for p in problems:
        print(p)
    print(f"help_defaults: {checked} documented defaults compared, {len(problems)} problems")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
